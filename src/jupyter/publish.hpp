// Publishing from Lua functions (rich.cpp) through the running kernel
// (kernel.cpp), under the capture's lock, after the text printed before.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace vela::jupyter {

// display_data with data (a MIME bundle); with an id, the display can be
// updated in place later: update = true sends update_display_data for it.
void publish_display(const nlohmann::json& data, const std::string& id, bool update);

}  // namespace vela::jupyter
