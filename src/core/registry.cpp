// The device registry: the registered backends' devices in registration
// order (the cpu first, then every Vulkan device as vulkan:N). A device is
// opened on first use and kept until exit.
#include "core/registry.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>

#include "core/error.hpp"

namespace vela {

namespace {

std::mutex registry_mutex;
std::vector<Device*> opened;
Device* current = nullptr;

// Which backend (its position) and index each device was opened as.
struct Origin {
    const Device* device;
    size_t backend, index;
};
std::vector<Origin> origins;

std::vector<Backend>& backends() {
    static std::vector<Backend> all;  // function-local: backends may register during static init
    return all;
}

void note_open(Device& d) {
    std::lock_guard<std::mutex> lock(registry_mutex);
    if (std::find(opened.begin(), opened.end(), &d) == opened.end()) opened.push_back(&d);
}

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower((unsigned char)c));
    return s;
}

bool all_digits(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit((unsigned char)c); });
}

std::vector<DeviceInfo> devices_of(const Backend& b) {
    try {
        return b.enumerate();
    } catch (const Error&) {
        return {};  // no driver: the backend has no devices
    }
}

Device& open_device(const Backend& b, const std::vector<DeviceInfo>& devs, size_t index, const std::string& spec) {
    const DeviceInfo& info = devs[index];
    if (!info.usable)
        fail("device: %s (%s) matches \"%s\" but is not usable: %s", info.id.c_str(), info.name.c_str(), spec.c_str(),
             info.reason.c_str());
    Device& d = b.open(index);
    note_open(d);
    std::lock_guard<std::mutex> lock(registry_mutex);
    if (std::none_of(origins.begin(), origins.end(), [&](const Origin& o) { return o.device == &d; }))
        origins.push_back({&d, size_t(&b - backends().data()), index});
    return d;
}

[[noreturn]] void no_match(const std::string& spec) {
    std::string list;
    for (const Backend& b : backends())
        for (const DeviceInfo& d : devices_of(b)) {
            list += list.empty() ? "" : ", ";
            list += b.numbered ? d.id + " (" + d.name + (d.usable ? "" : ", not usable") + ")" : d.id;
        }
    fail("device: no device matches \"%s\"; the devices are: %s", spec.c_str(), list.c_str());
}

// The first usable device of b, opened.
Device& first_usable(const Backend& b, const std::string& spec) {
    std::vector<DeviceInfo> devs = devices_of(b);
    for (size_t i = 0; i < devs.size(); i++)
        if (devs[i].usable) return open_device(b, devs, i, spec);
    no_match(spec);
}

// Device `rest` (a number) of b, or the first whose name or driver contains it.
Device* find_in(const Backend& b, const std::string& rest, const std::string& spec) {
    std::vector<DeviceInfo> devs = devices_of(b);
    if (all_digits(rest)) {
        if (rest.size() > 6 || size_t(std::stoul(rest)) >= devs.size()) no_match(spec);
        return &open_device(b, devs, std::stoul(rest), spec);
    }
    for (size_t i = 0; i < devs.size(); i++)
        if (lower(devs[i].name).find(rest) != std::string::npos || lower(devs[i].driver).find(rest) != std::string::npos)
            return &open_device(b, devs, i, spec);
    return nullptr;
}

}  // namespace

void register_backend(Backend backend) {
    std::lock_guard<std::mutex> lock(registry_mutex);
    backends().push_back(std::move(backend));
}

std::vector<DeviceInfo> list_devices() {
    std::vector<DeviceInfo> all;
    for (const Backend& b : backends())
        for (DeviceInfo& d : devices_of(b)) all.push_back(std::move(d));
    return all;
}

Device& get_device(const std::string& spec_in) {
    std::string spec = lower(spec_in);
    for (const Backend& b : backends())
        if (spec == b.name || std::find(b.aliases.begin(), b.aliases.end(), spec) != b.aliases.end())
            return first_usable(b, spec_in);
    // "vulkan:N" or "vulkan:part": that backend only.
    for (const Backend& b : backends()) {
        if (!b.numbered || spec.rfind(b.name + ":", 0) != 0) continue;
        std::string rest = spec.substr(b.name.size() + 1);
        if (rest.empty()) no_match(spec_in);
        if (Device* d = find_in(b, rest, spec_in)) return *d;
        no_match(spec_in);
    }
    // A bare number is a device of the first numbered backend; a bare part
    // of a name or driver, of any.
    for (const Backend& b : backends()) {
        if (!b.numbered) continue;
        if (Device* d = find_in(b, spec, spec_in)) return *d;
    }
    no_match(spec_in);
}

Device& default_device() {
    if (const char* env = std::getenv("VELA_DEVICE"); env && *env) return get_device(env);
    for (const Backend& b : backends()) {
        std::vector<DeviceInfo> devs = devices_of(b);
        for (size_t i = 0; i < devs.size(); i++)
            if (devs[i].usable && !devs[i].software && devs[i].type.find("gpu") != std::string::npos)
                return open_device(b, devs, i, devs[i].id);
    }
    if (backends().empty()) fail("device: no backend is registered (register_backends() was not called)");
    return first_usable(backends().front(), backends().front().name);
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

std::optional<DeviceInfo> device_info(const Device& d) {
    Origin found{nullptr, 0, 0};
    {
        std::lock_guard<std::mutex> lock(registry_mutex);
        for (const Origin& o : origins)
            if (o.device == &d) found = o;
    }
    if (!found.device) return std::nullopt;
    std::vector<DeviceInfo> devs = devices_of(backends()[found.backend]);
    if (found.index >= devs.size()) return std::nullopt;
    return devs[found.index];
}

}  // namespace vela
