// --install-kernel: the kernelspec Jupyter finds vela by (kernel.json in
// <data dir>/kernels/vela), naming this binary by its absolute path.
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "jupyter/kernel.hpp"

namespace vela::jupyter {

namespace {

std::string self_path() {
    char buf[PATH_MAX];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, size_t(n)) : std::string("vela");
}

int usage(const char* why) {
    std::fprintf(stderr, "vela --install-kernel: %s\nusage: vela --install-kernel [--user | --prefix DIR]\n", why);
    return EXIT_FAILURE;
}

}  // namespace

int install_kernel(int argc, char** argv) {
    namespace fs = std::filesystem;
    fs::path data = "/usr/local/share/jupyter";
    for (int i = 0; i < argc; ++i) {
        if (std::strcmp(argv[i], "--user") == 0) {
            const char* jdd = std::getenv("JUPYTER_DATA_DIR");
            const char* xdg = std::getenv("XDG_DATA_HOME");
            const char* home = std::getenv("HOME");
            if (jdd && *jdd)
                data = jdd;
            else if (xdg && *xdg)
                data = fs::path(xdg) / "jupyter";
            else if (home && *home)
                data = fs::path(home) / ".local/share/jupyter";
            else
                return usage("--user needs HOME");
        } else if (std::strcmp(argv[i], "--prefix") == 0) {
            if (i + 1 >= argc) return usage("--prefix needs a directory");
            data = fs::path(argv[++i]) / "share/jupyter";
        } else {
            return usage((std::string("unknown option '") + argv[i] + "'").c_str());
        }
    }
    nlohmann::json spec = {
        {"argv", {self_path(), "--kernel", "-f", "{connection_file}"}},
        {"display_name", "vela (Lua 5.4)"},
        {"language", "lua"},
        {"interrupt_mode", "signal"},
        {"metadata", {{"debugger", false}}},
    };
    fs::path dir = data / "kernels" / "vela";
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return usage(("cannot create " + dir.string() + ": " + ec.message()).c_str());
    // Written beside the target and renamed: a failed install leaves the old spec.
    fs::path tmp = dir / "kernel.json.tmp", target = dir / "kernel.json";
    {
        std::ofstream out(tmp);
        out << spec.dump(2) << "\n";
        if (!out) return usage(("cannot write " + tmp.string()).c_str());
    }
    fs::rename(tmp, target, ec);
    if (ec) return usage(("cannot write " + target.string() + ": " + ec.message()).c_str());
    std::printf("installed the kernelspec 'vela' in %s\n", dir.c_str());
    return EXIT_SUCCESS;
}

}  // namespace vela::jupyter
