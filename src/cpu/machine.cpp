// The machine as the cpu device sees it: what memory this process may still
// allocate (MemAvailable, cgroup v2/v1 limits, RLIMIT_AS), the physical
// memory, the processor's model name and the OpenBLAS build (cpu_device.hpp).
#include <cblas.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "cpu/cpu_device.hpp"

namespace vela::cpu {

namespace {

// A number from a one-line file such as /sys/fs/cgroup/memory.max; false for
// "max", a missing file or anything unreadable.
bool read_number(const char* path, uint64_t& out) {
    std::ifstream f(path);
    unsigned long long v = 0;
    if (!(f >> v)) return false;
    out = v;
    return true;
}

// The value (in bytes) of `key` in a "key value [kB]" file (/proc/meminfo, memory.stat, /proc/self/status).
bool read_field(const char* path, const char* key, uint64_t& out) {
    std::ifstream f(path);
    unsigned long long v;
    std::string line;
    size_t n = std::strlen(key);
    while (std::getline(f, line)) {
        if (line.compare(0, n, key) != 0 || line.size() <= n || (line[n] != ':' && line[n] != ' ')) continue;
        v = std::strtoull(line.c_str() + n + 1, nullptr, 10);
        out = line.find("kB") != std::string::npos ? v * 1024 : v;
        return true;
    }
    return false;
}

// The cgroup directories whose limits apply to this process, innermost first,
// for cgroup v2 (v1 = false) or v1's memory controller: $VELA_CGROUP_DIR alone
// when set (tests point it at files they write: v2 files in it, v1 files in
// its memory/ subdirectory), else the process's own cgroup as /proc/self/cgroup
// names it ("0::/path" for v2, "N:memory:/path" for v1; "/" inside a
// container's cgroup namespace) under /sys/fs/cgroup (v1: /sys/fs/cgroup/memory),
// and each ancestor up to that root: a limit set on any of them applies.
std::vector<std::string> cgroup_dirs(bool v1) {
    if (const char* dir = std::getenv("VELA_CGROUP_DIR"); dir && *dir) return {std::string(dir) + (v1 ? "/memory" : "")};
    const std::string root = v1 ? "/sys/fs/cgroup/memory" : "/sys/fs/cgroup";
    std::string rel;
    std::ifstream f("/proc/self/cgroup");
    for (std::string line; std::getline(f, line);) {
        size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
        if (b == std::string::npos) continue;
        std::string controllers = line.substr(a + 1, b - a - 1);
        bool mine = v1 ? ("," + controllers + ",").find(",memory,") != std::string::npos
                       : line.compare(0, a, "0") == 0 && controllers.empty();
        if (mine) rel = line.substr(b + 1);
    }
    std::vector<std::string> dirs;
    while (!rel.empty() && rel != "/" && rel.find("..") == std::string::npos) {
        dirs.push_back(root + rel);
        rel.resize(rel.rfind('/'));
    }
    dirs.push_back(root);
    return dirs;
}

// The headroom of a cgroup limit: max − usage, counting the inactive page cache as free (the kernel reclaims it first).
uint64_t cgroup_room(uint64_t max, uint64_t cur, uint64_t cache) {
    return max > cur ? max - cur + std::min(cache, cur) : std::min(cache, cur);
}

}  // namespace

MemoryLimit available_memory() {
    MemoryLimit m{UINT64_MAX, "no limit found"};
    uint64_t v = 0;
    if (read_field("/proc/meminfo", "MemAvailable", v) && v < m.bytes) m = {v, "MemAvailable in /proc/meminfo"};
    // cgroup v2: memory.max ("max": none) of this cgroup and its ancestors; else v1's memory.limit_in_bytes.
    uint64_t max = 0, cur = 0, cache = 0;
    bool v2 = false;
    for (const std::string& d : cgroup_dirs(false)) {
        if (!read_number((d + "/memory.max").c_str(), max) || !read_number((d + "/memory.current").c_str(), cur))
            continue;
        v2 = true;
        cache = 0;
        read_field((d + "/memory.stat").c_str(), "inactive_file", cache);
        uint64_t room = cgroup_room(max, cur, cache);
        if (room < m.bytes) m = {room, "the cgroup's memory.max"};
    }
    if (!v2) {
        for (const std::string& d : cgroup_dirs(true)) {
            if (!read_number((d + "/memory.limit_in_bytes").c_str(), max) ||
                !read_number((d + "/memory.usage_in_bytes").c_str(), cur))
                continue;
            cache = 0;
            read_field((d + "/memory.stat").c_str(), "total_inactive_file", cache);
            uint64_t room = cgroup_room(max, cur, cache);
            if (room < m.bytes) m = {room, "the cgroup's memory.limit_in_bytes"};
        }
    }
    // The address-space limit (ulimit -v, prlimit --as) less what is mapped already.
    struct rlimit rl {};
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && read_field("/proc/self/status", "VmSize", v)) {
        uint64_t room = rl.rlim_cur > v ? rl.rlim_cur - v : 0;
        if (room < m.bytes) m = {room, "RLIMIT_AS (ulimit -v) less the address space in use"};
    }
    return m;
}

std::string description() {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind("model name", 0) == 0) {
            size_t c = line.find(':');
            if (c != std::string::npos) return line.substr(line.find_first_not_of(' ', c + 1));
        }
    }
    return "cpu";
}

// "0.3.21" from "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ... Haswell MAX_THREADS=64".
std::string blas_version() {
    std::string s = openblas_get_config();
    size_t b = s.find(' ');
    if (b == std::string::npos) return s;
    size_t e = s.find(' ', b + 1);
    return s.substr(b + 1, e == std::string::npos ? std::string::npos : e - b - 1);
}

std::string blas_config() { return openblas_get_config(); }

uint64_t physical_memory() {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? uint64_t(pages) * uint64_t(size) : 0;
}

}  // namespace vela::cpu
