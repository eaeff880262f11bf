// In-process GLSL → SPIR-V for kernels written at the prompt, with libshaderc
// (the library behind glslc; no subprocess). Results are cached in memory and
// on disk in <cache_dir()>/kernels/ beside the pipeline cache, keyed by the
// whole generated source and the compile options, so a second session skips
// the compile; the VkPipelineCache beside it then keeps the driver's part per
// device. A compile error names the kernel and shows the user's own line
// numbers and lines, never the generated preamble's.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace vela::userk {

struct CompiledKernel {
    const char* module = "";  // interned id: "user:" + 16 hex digits of the source's hash
    std::shared_ptr<const std::vector<uint32_t>> spirv;
    enum From { compiled, memory, disk } from = compiled;
    double ms = 0;  // wall time of this lookup or compile
};

// source: a whole compute shader in which the user's text follows a line
// `#line 1 "user"` (and the generated text after it, `#line 1 "vela-end"`: errors found there are reported after the user's last line);
// user_text: the user's text alone, quoted in errors; name: the kernel's name.
// Throws vela::Error: "swish: GLSL compile error\n  line 2: ...\n    2 | ...".
CompiledKernel compile_user(const std::string& name, const std::string& source, const std::string& user_text);

// The #version line of every user kernel: 430, the oldest with compute shaders,
// because glslang's first compile in a process builds the built-in function
// tables of that version for every stage, and 450's take twice as long.
inline constexpr const char* kUserVersion = "#version 430";

// Builds glslang's tables now on a background thread (once per process), so
// the first compile_user finds them ready; compile_user waits for it if not.
// main() calls it where kernels are likely (at the prompt; a script or -e
// chunk that mentions map or kernel); without it the first compile builds them.
void start_compiler();

// The directory of the on-disk cache ("" when there is none).
std::string kernel_cache_dir();

}  // namespace vela::userk
