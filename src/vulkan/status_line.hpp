// A one-line status on the terminal while a device does first-use work that
// takes seconds (pipelines built and, on lavapipe, compiled by LLVM at their
// first dispatch): shown only when stderr is a terminal, so nothing reaches
// logs or pipes, and erased when the work is done. VELA_STATUS=0 turns it off.
#pragma once
#include <string>

namespace vela::vk {

// Shows `text` (cut to the terminal's width) in place of any status shown before.
void status_show(const std::string& text);
// Erases the status, if one is shown.
void status_clear();

}  // namespace vela::vk
