// The device registry: the cpu first, then every Vulkan device as vulkan:N.
// A device is opened on first use and kept until exit.
#include "core/registry.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>

#include "core/error.hpp"
#include "cpu/cpu_device.hpp"

namespace vela {

namespace {

std::mutex registry_mutex;
std::vector<Device*> opened;
Device* current = nullptr;

void note_open(Device& d) {
    std::lock_guard<std::mutex> lock(registry_mutex);
    if (std::find(opened.begin(), opened.end(), &d) == opened.end()) opened.push_back(&d);
}

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower((unsigned char)c));
    return s;
}

std::vector<DeviceInfo> vulkan_devices() {
    try {
        return vk::enumerate();
    } catch (const Error&) {
        return {};  // no loader or no ICD: the cpu alone
    }
}

DeviceInfo cpu_info() {
    DeviceInfo d;
    d.id = "cpu";
    d.name = cpu::description();
    d.type = "cpu";
    d.driver = "OpenBLAS";
    d.driver_version = cpu::blas_version();
    d.memory = cpu::physical_memory();
    d.limits.push_back({"threads", std::to_string(cpu::threads())});
    d.limits.push_back({"blas", cpu::blas_config()});
    return d;
}

Device& open_vulkan(const std::vector<DeviceInfo>& vks, size_t index, const std::string& spec) {
    const DeviceInfo& info = vks[index];
    if (!info.usable)
        fail("device: %s (%s) matches \"%s\" but is not usable: %s", info.id.c_str(), info.name.c_str(), spec.c_str(),
             info.reason.c_str());
    Device& d = vk::open(int(index));
    note_open(d);
    return d;
}

[[noreturn]] void no_match(const std::string& spec, const std::vector<DeviceInfo>& vks) {
    std::string list = "cpu";
    for (const DeviceInfo& d : vks) list += ", " + d.id + " (" + d.name + (d.usable ? "" : ", not usable") + ")";
    fail("device: no device matches \"%s\"; the devices are: %s", spec.c_str(), list.c_str());
}

}  // namespace

std::vector<DeviceInfo> list_devices() {
    std::vector<DeviceInfo> all{cpu_info()};
    for (DeviceInfo& d : vulkan_devices()) all.push_back(std::move(d));
    return all;
}

Device& cpu_device() {
    Device& d = cpu::device();
    note_open(d);
    return d;
}

Device& get_device(const std::string& spec_in) {
    std::string spec = lower(spec_in);
    if (spec == "cpu") return cpu_device();
    std::vector<DeviceInfo> vks = vulkan_devices();
    if (spec == "vulkan" || spec == "gpu") {
        for (size_t i = 0; i < vks.size(); i++)
            if (vks[i].usable) return open_vulkan(vks, i, spec_in);
        no_match(spec_in, vks);
    }
    std::string rest = spec.rfind("vulkan:", 0) == 0 ? spec.substr(7) : spec;
    if (rest.empty()) no_match(spec_in, vks);
    if (std::all_of(rest.begin(), rest.end(), [](char c) { return std::isdigit((unsigned char)c); })) {
        if (rest.size() > 6 || size_t(std::stoul(rest)) >= vks.size()) no_match(spec_in, vks);
        return open_vulkan(vks, std::stoul(rest), spec_in);
    }
    for (size_t i = 0; i < vks.size(); i++) {
        if (lower(vks[i].name).find(rest) != std::string::npos || lower(vks[i].driver).find(rest) != std::string::npos)
            return open_vulkan(vks, i, spec_in);
    }
    no_match(spec_in, vks);
}

Device& default_device() {
    if (const char* env = std::getenv("VELA_DEVICE"); env && *env) return get_device(env);
    std::vector<DeviceInfo> vks = vulkan_devices();
    for (size_t i = 0; i < vks.size(); i++)
        if (vks[i].usable && !vks[i].software && vks[i].type.find("gpu") != std::string::npos)
            return open_vulkan(vks, i, vks[i].id);
    return cpu_device();
}

Device& current_device() {
    if (!current) current = &default_device();
    return *current;
}

void set_current_device(Device& d) {
    note_open(d);
    current = &d;
}

std::vector<Device*> open_devices() {
    std::lock_guard<std::mutex> lock(registry_mutex);
    return opened;
}

}  // namespace vela
