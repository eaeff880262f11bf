#include "vulkan/context.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"
#include "core/host_memory.hpp"
#include "vulkan/check.hpp"
#include "vulkan/pin_modules.hpp"

namespace vela::vk {

bool env_on(const char* name) {
    const char* e = std::getenv(name);
    return e && *e && std::strcmp(e, "0") != 0;
}

namespace {

// What set_lavapipe_width() decided, for the "vector width" line of lavapipe's limits.
std::string& lavapipe_width_how() {
    static std::string how = "Mesa's default (LP_NATIVE_VECTOR_WIDTH unset)";
    return how;
}

std::unique_ptr<Context>& context_slot() {
    static std::unique_ptr<Context> c;
    return c;
}
int& validation_choice() {  // -1: from VELA_VALIDATE, 0 off, 1 on
    static int v = -1;
    return v;
}
std::atomic<uint64_t> message_count{0};

// Once a device is lost nothing runs on it any more, and its objects must
// still be destroyed before it (VUID-vkDestroyDevice-device-05137): the
// teardown destroys them, as Dawn does (a lost device's work is no longer
// pending). The layer retires a fence or command buffer only when it sees the
// fence signalled, which a lost device never reports, so its "in use" errors
// at that teardown are stale; after check() has seen a loss they are dropped
// (an H200's interrupt test printed the first two at exit).
bool stale_after_loss(const VkDebugUtilsMessengerCallbackDataEXT* data) {
    static const char* const in_use[] = {
        "VUID-vkDestroyFence-fence-01120",
        "VUID-vkDestroyCommandPool-commandPool-00041",
        "VUID-vkFreeCommandBuffers-pCommandBuffers-00047",
        "VUID-vkResetCommandPool-commandPool-00040",
        "VUID-vkResetFences-pFences-01123",
        "VUID-vkDestroyQueryPool-queryPool-00793",
        "VUID-vkDestroyBuffer-buffer-00922",
        "VUID-vkFreeMemory-memory-00677",
        "VUID-vkDestroyBufferView-bufferView-00936",
        "VUID-vkDestroyPipeline-pipeline-00765",
    };
    if (!data || !data->pMessageIdName || !device_lost_seen()) return false;
    for (const char* id : in_use)
        if (std::strcmp(data->pMessageIdName, id) == 0) return true;
    return false;
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
    if (stale_after_loss(data)) return VK_FALSE;
    const char* level = severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning";
    std::fprintf(stderr, "vela: validation %s: %s\n", level, data && data->pMessage ? data->pMessage : "");
    message_count.fetch_add(1);
    return VK_FALSE;
}

std::string version_string(uint32_t v) {
    return format("%u.%u.%u", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v));
}

std::string bytes_string(uint64_t b) {
    if (b >= (1ull << 30)) return format("%.2f GiB", double(b) / double(1ull << 30));
    return format("%.0f MiB", double(b) / double(1ull << 20));
}

const char* type_name(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated gpu";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "software";
    default: return "other";
    }
}

// Reads everything enumerate() reports and open() needs from one physical device.
PhysicalInfo describe(VkPhysicalDevice pd, size_t index) {
    PhysicalInfo p;
    p.handle = pd;
    auto driver = make<VkPhysicalDeviceDriverProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES);
    auto subgroup = make<VkPhysicalDeviceSubgroupProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
    subgroup.pNext = &driver;
    auto props2 = make<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
    props2.pNext = &subgroup;
    vkGetPhysicalDeviceProperties(pd, &p.props);
    bool v12 = p.props.apiVersion >= VK_API_VERSION_1_2;
    if (v12) vkGetPhysicalDeviceProperties2(pd, &props2);
    vkGetPhysicalDeviceMemoryProperties(pd, &p.memory);

    const VkPhysicalDeviceLimits& lim = p.props.limits;
    DeviceInfo& d = p.info;
    d.id = format("vulkan:%zu", index);
    d.name = p.props.deviceName;
    d.type = type_name(p.props.deviceType);
    d.software = p.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    d.driver = v12 ? driver.driverName : "";
    // driverInfo is free text and may be empty (SwiftShader): the packed version then.
    d.driver_version = v12 && driver.driverInfo[0] ? driver.driverInfo : version_string(p.props.driverVersion);
    d.api_version = version_string(p.props.apiVersion);
    d.subgroup = v12 ? subgroup.subgroupSize : 0;
    for (uint32_t h = 0; h < p.memory.memoryHeapCount; ++h) {
        const VkMemoryHeap& heap = p.memory.memoryHeaps[h];
        if (heap.flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) d.memory = std::max<uint64_t>(d.memory, heap.size);
        d.limits.emplace_back(format("memory heap %u", h),
                              bytes_string(heap.size) +
                                  (heap.flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT ? " device-local" : " host"));
    }

    Caps& c = p.caps;
    c.subgroup_size = d.subgroup ? d.subgroup : 1;
    c.max_workgroup_invocations = lim.maxComputeWorkGroupInvocations;
    for (int i = 0; i < 3; ++i) {
        c.max_workgroup_size[i] = lim.maxComputeWorkGroupSize[i];
        c.max_workgroup_count[i] = lim.maxComputeWorkGroupCount[i];
    }
    c.max_shared_memory = lim.maxComputeSharedMemorySize;
    c.max_push_constants = std::min<uint32_t>(lim.maxPushConstantsSize, 128);
    c.software = d.software;
    c.subgroup_arithmetic = v12 && (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                            (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
    c.vendor_id = p.props.vendorID;

    if (v12 && driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE)
        d.limits.emplace_back("vector width", format("%u bits: ", d.subgroup * 32) + lavapipe_width_how());
    d.limits.emplace_back("maxComputeWorkGroupInvocations", std::to_string(lim.maxComputeWorkGroupInvocations));
    d.limits.emplace_back("maxComputeWorkGroupCount",
                          format("%u × %u × %u", lim.maxComputeWorkGroupCount[0], lim.maxComputeWorkGroupCount[1],
                                 lim.maxComputeWorkGroupCount[2]));
    d.limits.emplace_back("maxComputeSharedMemorySize", std::to_string(lim.maxComputeSharedMemorySize));
    d.limits.emplace_back("maxStorageBufferRange", bytes_string(lim.maxStorageBufferRange));
    d.limits.emplace_back("maxPushConstantsSize", std::to_string(lim.maxPushConstantsSize));

    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> qf(nq);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf.data());
    bool compute = false;
    // Prefer a compute-only family (async compute on discrete GPUs), else any with compute.
    for (int pass = 0; pass < 2 && !compute; ++pass)
        for (uint32_t i = 0; i < nq; ++i) {
            bool has = qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT;
            bool gfx = qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT;
            if (has && (pass == 1 || !gfx)) {
                p.queue_family = i;
                p.timestamps = qf[i].timestampValidBits > 0 && lim.timestampPeriod > 0;
                p.timestamp_bits = qf[i].timestampValidBits;
                compute = true;
                break;
            }
        }

    {
        uint32_t ne = 0;
        vkEnumerateDeviceExtensionProperties(pd, nullptr, &ne, nullptr);
        std::vector<VkExtensionProperties> ext(ne);
        vkEnumerateDeviceExtensionProperties(pd, nullptr, &ne, ext.data());
        for (const VkExtensionProperties& e : ext)
            if (std::string(e.extensionName) == VK_EXT_CONDITIONAL_RENDERING_EXTENSION_NAME) {
                auto cr = make<VkPhysicalDeviceConditionalRenderingFeaturesEXT>(
                    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_CONDITIONAL_RENDERING_FEATURES_EXT);
                auto f = make<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
                f.pNext = &cr;
                vkGetPhysicalDeviceFeatures2(pd, &f);
                p.conditional = cr.conditionalRendering;
            } else if (std::string(e.extensionName) == VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME) {
                p.push_descriptor = true;
            }
    }

    // What vela needs: Vulkan 1.2, buffer device address and a compute queue.
    // Shaders use no 64-bit integers (addresses are pairs of 32-bit words) and
    // no 8-bit storage (uint8 matrices are read and written through 32-bit
    // words), so devices without shaderInt64 or storageBuffer8BitAccess
    // (SwiftShader, some mobile GPUs) run every kernel.
    std::vector<std::string> missing;
    if (!v12) missing.push_back("Vulkan 1.2 (device offers " + d.api_version + ")");
    if (!compute) missing.push_back("a compute queue");
    if (v12) {
        auto f12 = make<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
        auto f2 = make<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
        f2.pNext = &f12;
        vkGetPhysicalDeviceFeatures2(pd, &f2);
        if (!f12.bufferDeviceAddress) missing.push_back("bufferDeviceAddress");
        c.int64 = f2.features.shaderInt64;
        d.limits.emplace_back("shaderInt64", c.int64 ? "yes (mm's faster variant on software devices)"
                                                     : "no (not needed: every kernel runs without it)");
        d.limits.emplace_back("storageBuffer8BitAccess", f12.storageBuffer8BitAccess ? "yes (not used)" : "no (not needed)");
    }
    // mm on CPU implementations uses subgroupBroadcast (mm_regblock.comp);
    // without subgroup ballot in compute shaders mm and dense take the tiled
    // kernel instead, which needs nothing beyond the core.
    c.subgroup_ballot = v12 && (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                        (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT) && d.subgroup > 0;
    if (!c.subgroup_ballot)
        d.limits.emplace_back("subgroup ballot", "no: mm and dense use the tiled kernel (mm_tiled.comp)");
    c.subgroup_shuffle = c.subgroup_ballot && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
    // Texel views of memory blocks for mm_regblock_tex (docs/gemm.md): push
    // descriptors and uniform and storage texel buffers of both float formats.
    auto texel_format = [&](VkFormat f, VkFormatFeatureFlags need) {
        VkFormatProperties fp{};
        vkGetPhysicalDeviceFormatProperties(pd, f, &fp);
        return (fp.bufferFeatures & need) == need;
    };
    c.max_texel_elements = lim.maxTexelBufferElements;
    c.texel_views = p.push_descriptor &&
                    texel_format(VK_FORMAT_R32_SFLOAT, VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT |
                                                           VK_FORMAT_FEATURE_STORAGE_TEXEL_BUFFER_BIT) &&
                    texel_format(VK_FORMAT_R32G32B32A32_SFLOAT, VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT |
                                                                    VK_FORMAT_FEATURE_STORAGE_TEXEL_BUFFER_BIT) &&
                    texel_format(VK_FORMAT_R8G8B8A8_UINT, VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT) &&
                    c.max_texel_elements >= 4;
    if (!p.timestamps) d.limits.emplace_back("timestamps", "no: profile() reports no per-kernel device times");
    if (!missing.empty()) {
        d.usable = false;
        d.reason = "missing ";
        for (size_t i = 0; i < missing.size(); ++i) d.reason += (i ? ", " : "") + missing[i];
    }
    return p;
}

}  // namespace

void set_lavapipe_width() {
    if (const char* set = std::getenv("LP_NATIVE_VECTOR_WIDTH"); set && *set) {
        lavapipe_width_how() = std::string("LP_NATIVE_VECTOR_WIDTH=") + set + " (the environment's choice, respected)";
        return;
    }
#if defined(__x86_64__) || defined(__i386__)
    // libgcc's checks include the operating system's saving of the ZMM state.
    __builtin_cpu_init();
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    if (avx512) {
        setenv("LP_NATIVE_VECTOR_WIDTH", "512", 0);
        lavapipe_width_how() = "LP_NATIVE_VECTOR_WIDTH=512, set by vela for this AVX-512 processor "
                               "(LP_NATIVE_VECTOR_WIDTH=256 keeps Mesa's default)";
    }
#endif
}

Context& Context::get() {
    auto& c = context_slot();
    if (!c) c.reset(new Context());
    return *c;
}

bool Context::exists() { return context_slot() != nullptr; }
void Context::reset() { context_slot().reset(); }

void Context::set_validation(bool on) { validation_choice() = on ? 1 : 0; }

bool Context::validation() {
    if (validation_choice() < 0) {
        const char* e = std::getenv("VELA_VALIDATE");
        validation_choice() = e && *e && std::strcmp(e, "0") != 0 ? 1 : 0;
    }
    return validation_choice() == 1;
}

uint64_t Context::messages() { return message_count.load(); }

Context::Context() {
    auto app = make<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
    app.pApplicationName = "vela";
    app.pEngineName = "vela";
    app.apiVersion = VK_API_VERSION_1_2;

    std::vector<const char*> layers, extensions;
    bool validate = validation();
    if (validate) {
        uint32_t n = 0;
        check(vkEnumerateInstanceLayerProperties(&n, nullptr), "vkEnumerateInstanceLayerProperties");
        std::vector<VkLayerProperties> have(n);
        check(vkEnumerateInstanceLayerProperties(&n, have.data()), "vkEnumerateInstanceLayerProperties");
        bool found = false;
        for (auto& l : have) found |= std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation") == 0;
        if (!found)
            fail("validation: VK_LAYER_KHRONOS_validation is not installed (Debian: apt install "
                 "vulkan-validationlayers)");
        layers.push_back("VK_LAYER_KHRONOS_validation");
        extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    }
    auto dbg = make<VkDebugUtilsMessengerCreateInfoEXT>(VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
    dbg.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    dbg.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                      VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    dbg.pfnUserCallback = on_message;

    auto ci = make<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
    ci.pApplicationInfo = &app;
    ci.enabledLayerCount = uint32_t(layers.size());
    ci.ppEnabledLayerNames = layers.data();
    ci.enabledExtensionCount = uint32_t(extensions.size());
    ci.ppEnabledExtensionNames = extensions.data();
    if (validate) ci.pNext = &dbg;  // also catches messages from vkCreateInstance itself
    advise_heap_huge_pages();  // the driver's allocations as it loads (core/host_memory.hpp)
    check(vkCreateInstance(&ci, nullptr, &instance_), "vkCreateInstance");
    arm_exit_teardown();

    if (validate) {
        auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
        if (create) check(create(instance_, &dbg, nullptr, &messenger_), "vkCreateDebugUtilsMessengerEXT");
    }

    uint32_t n = 0;
    check(vkEnumeratePhysicalDevices(instance_, &n, nullptr), "vkEnumeratePhysicalDevices");
    std::vector<VkPhysicalDevice> pds(n);
    check(vkEnumeratePhysicalDevices(instance_, &n, pds.data()), "vkEnumeratePhysicalDevices");
    // A stable order, whatever order the loader finds the drivers in: hardware
    // GPUs first (discrete, integrated, virtual), then software ones, each kind
    // by driver name, then device name (lavapipe's llvmpipe before SwiftShader),
    // so vulkan:N names the same device from one run to the next.
    auto rank = [](VkPhysicalDeviceType t) {
        switch (t) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
        case VK_PHYSICAL_DEVICE_TYPE_CPU: return 4;
        default: return 3;
        }
    };
    struct Found {
        VkPhysicalDevice pd;
        int rank;
        std::string driver, name;
        size_t loader_index;
    };
    std::vector<Found> found;
    for (size_t i = 0; i < pds.size(); ++i) {
        auto driver = make<VkPhysicalDeviceDriverProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES);
        auto props2 = make<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
        VkPhysicalDeviceProperties props;
        vkGetPhysicalDeviceProperties(pds[i], &props);
        if (props.apiVersion >= VK_API_VERSION_1_2) {
            props2.pNext = &driver;
            vkGetPhysicalDeviceProperties2(pds[i], &props2);
        }
        auto lower = [](std::string s) {
            for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
            return s;
        };
        found.push_back({pds[i], rank(props.deviceType), lower(driver.driverName), lower(props.deviceName), i});
    }
    std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
        if (a.rank != b.rank) return a.rank < b.rank;
        if (a.driver != b.driver) return a.driver < b.driver;
        if (a.name != b.name) return a.name < b.name;
        return a.loader_index < b.loader_index;
    });
    for (size_t i = 0; i < found.size(); ++i) physical_.push_back(describe(found[i].pd, i));
    pin_loaded_modules();  // the drivers are loaded by now; see pin_modules.cpp
}

Context::~Context() {
    if (messenger_) {
        auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
        if (destroy) destroy(instance_, messenger_, nullptr);
    }
    if (instance_) vkDestroyInstance(instance_, nullptr);
}

Gpu::Gpu(const PhysicalInfo& p, const std::vector<const char*>& extensions) : phys(p) {
    float priority = 1.0f;
    auto q = make<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
    q.queueFamilyIndex = p.queue_family;
    q.queueCount = 1;
    q.pQueuePriorities = &priority;

    auto f12 = make<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
    f12.bufferDeviceAddress = VK_TRUE;
    auto f2 = make<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
    f2.pNext = &f12;
    f2.features.shaderInt64 = p.caps.int64 ? VK_TRUE : VK_FALSE;  // optional: only mm_regblock_i64 uses it

    auto cr = make<VkPhysicalDeviceConditionalRenderingFeaturesEXT>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_CONDITIONAL_RENDERING_FEATURES_EXT);
    const char* extension = VK_EXT_CONDITIONAL_RENDERING_EXTENSION_NAME;
    if (p.conditional) {
        cr.conditionalRendering = VK_TRUE;
        f12.pNext = &cr;
    }

    auto ci = make<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
    ci.pNext = &f2;
    ci.queueCreateInfoCount = 1;
    ci.pQueueCreateInfos = &q;
    std::vector<const char*> names(extensions);
    if (p.conditional) names.push_back(extension);
    if (p.caps.texel_views) names.push_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    ci.enabledExtensionCount = uint32_t(names.size());
    ci.ppEnabledExtensionNames = names.empty() ? nullptr : names.data();
    advise_heap_huge_pages();
    check(vkCreateDevice(p.handle, &ci, nullptr, &device), "vkCreateDevice");
    arm_exit_teardown();
    pin_loaded_modules();  // a driver may load more objects for a device
    vkGetDeviceQueue(device, p.queue_family, 0, &queue);
}

Gpu::~Gpu() {
    if (device) {
        (void)vkDeviceWaitIdle(device);  // teardown: a lost device is destroyed all the same
        vkDestroyDevice(device, nullptr);
    }
}

}  // namespace vela::vk
