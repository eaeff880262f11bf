// Compute pipelines, made on first use per (shader, specialization constants)
// and kept for the device's lifetime. One pipeline layout serves every shader:
// no descriptor sets, only a 128-byte push-constant range (operands travel as
// buffer device addresses). The VkPipelineCache is loaded from and saved to
// $XDG_CACHE_HOME/vela (or ~/.cache/vela), one file per device and driver,
// behind vela's own header with a hash of the contents: a damaged file is
// dropped with a one-line warning and rebuilt, never handed to the driver
// (SwiftShader crashes on one).
#pragma once
#include <vulkan/vulkan.h>

#include <array>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vulkan/check.hpp"
#include "vulkan/context.hpp"

namespace vela::vk {

constexpr uint32_t kPushBytes = 128;

// vela's cache directory: $XDG_CACHE_HOME/vela, else ~/.cache/vela ("" when neither is set).
std::string cache_dir();
// A 64-bit hash of bytes for the disk caches' integrity checks (not cryptographic).
uint64_t content_hash(const void* data, size_t bytes);
constexpr uint32_t kMaxSpec = 11;  // mm_tiled.comp has 11

class Pipelines {
public:
    explicit Pipelines(Gpu& gpu);
    ~Pipelines();  // saves the cache
    Pipelines(const Pipelines&) = delete;
    Pipelines& operator=(const Pipelines&) = delete;

    // Throws vela::Error for an unknown shader or a failed creation.
    VkPipeline get(const char* shader, const uint32_t* spec, uint32_t spec_count);
    // Makes a module from SPIR-V compiled at run time (user kernels), found by
    // `shader` afterwards; a no-op when that name is known already.
    void add_module(const std::string& shader, const std::vector<uint32_t>& spirv);
    VkPipelineLayout layout() const { return layout_; }
    size_t count() const { return pipelines_.size(); }
    // First use of a costly pipeline (mm's register block; docs/vulkan.md,
    // "First use"): true while (shader, spec) is not made on this device and
    // the work run on a cheaper pipeline in its stead, `work` included, stays
    // within `budget` (the work is then counted). Once it returns false the
    // caller makes the pipeline and it is used from then on.
    bool stand_in(const char* shader, const uint32_t* spec, uint32_t spec_count, double work, double budget);
    // Pipelines made since the last call (the stream's first-use status on lavapipe).
    uint32_t take_fresh() { uint32_t n = fresh_; fresh_ = 0; return n; }
    void save();

private:
    struct Key {
        std::string shader;
        std::array<uint32_t, kMaxSpec> spec{};
        uint32_t n = 0;
        bool operator==(const Key& o) const { return n == o.n && spec == o.spec && shader == o.shader; }
    };
    struct KeyHash {
        size_t operator()(const Key& k) const;
    };
    static Key key_of(const char* shader, const uint32_t* spec, uint32_t spec_count);
    VkShaderModule module(const std::string& shader);
    // The SPIR-V of a built-in shader or of one given to add_module; throws for an unknown name.
    std::pair<const uint32_t*, size_t> code(const std::string& shader) const;
    OwnedShader make_module(const uint32_t* code, size_t words);
    std::string cache_path() const;
    // The cache file's driver data when its header and hash check out; a damaged
    // file is removed with a warning on stderr and yields nothing.
    std::vector<char> load_cache_file(const std::string& path) const;

    Gpu& gpu_;
    OwnedSetLayout set_layout_;  // set 0, push descriptors (Caps::texel_views)
    OwnedLayout layout_;
    OwnedPipelineCache cache_;
    std::unordered_map<std::string, OwnedShader> modules_;
    std::unordered_map<std::string, std::vector<uint32_t>> user_code_;  // add_module's SPIR-V
    std::unordered_map<Key, OwnedPipeline, KeyHash> pipelines_;
    std::unordered_map<Key, double, KeyHash> stood_in_;  // stand_in's work so far, per pipeline not yet made
    bool dirty_ = false;
    uint32_t fresh_ = 0;
    // The last lookup, checked first: consecutive dispatches often share a pipeline.
    const char* last_shader_ = nullptr;
    Key last_key_;
    VkPipeline last_ = VK_NULL_HANDLE;
};

}  // namespace vela::vk
