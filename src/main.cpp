// vela: the command line, as lua.c of Lua 5.4 reads it, plus the device
// options. With no script and a terminal on stdin it starts the prompt;
// with stdin piped it runs stdin as a script.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "backends.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "cpu/blas_core.hpp"
#include "cpu/isa.hpp"
#include "lua/vela.hpp"
#include "repl/repl.hpp"
#include "userk/compiler.hpp"
#ifdef VELA_JUPYTER
#include "jupyter/kernel.hpp"
#endif

namespace {

const char* progname = "vela";

void print_usage(FILE* out) {
    std::fprintf(out,
                 "usage: %s [options] [script [args]]\n"
                 "Available options are:\n"
                 "  -e stat          execute string 'stat'\n"
                 "  -i               enter interactive mode after executing 'script'\n"
                 "  -l mod           require library 'mod' into global 'mod'\n"
                 "  -l g=mod         require library 'mod' into global 'g'\n"
                 "  -v, --version    show version information\n"
                 "  -E               ignore environment variables (LUA_INIT, LUA_PATH, LUA_CPATH,\n"
                 "                   VELA_DEVICE)\n"
                 "  -W               turn warnings on\n"
                 "  -h, --help       show this help\n"
                 "  --device SPEC    make SPEC the current device (cpu, vulkan, vulkan:N, or a\n"
                 "                   part of a device's name); also $VELA_DEVICE\n"
                 "  --list-devices   list the devices and exit\n"
                 "  --validate       turn on the Vulkan validation layer; also VELA_VALIDATE=1\n"
                 "  --kernel -f FILE run as a Jupyter kernel on the connection file FILE\n"
                 "  --install-kernel [--user | --prefix DIR]\n"
                 "                   install the Jupyter kernelspec 'vela' and exit\n"
                 "  --               stop handling options\n"
                 "  -                stop handling options and execute stdin\n"
                 "With no script, vela starts the prompt when stdin is a terminal and runs\n"
                 "stdin as a script otherwise.\n",
                 progname);
}

void print_version() {
    std::printf("vela %s  (%s)\n", VELA_VERSION, LUA_COPYRIGHT);
    std::fflush(stdout);
}

struct Options {
    bool interactive = false, version = false, help = false, has_e = false, no_env = false;
    bool list_devices = false, validate = false, kernel = false;
    std::string device, connection_file;
    int script = 0;  // index in argv of the script, or argc when none
    std::vector<std::pair<char, const char*>> actions;  // -e, -l and -W, in order
};

// Walks argv up to the script name. Returns false (after saying why) on a
// bad option.
bool collect_args(int argc, char** argv, Options& o) {
    int i = 1;
    for (; i < argc; ++i) {
        const char* a = argv[i];
        if (a[0] != '-') break;  // the script
        if (std::strcmp(a, "-") == 0) break;  // stdin as the script
        if (std::strcmp(a, "--") == 0) {
            ++i;
            break;
        }
        if (std::strcmp(a, "-i") == 0) o.interactive = o.version = true;
        else if (std::strcmp(a, "-v") == 0 || std::strcmp(a, "--version") == 0) o.version = true;
        else if (std::strcmp(a, "-E") == 0) o.no_env = true;
        else if (std::strcmp(a, "-W") == 0) o.actions.emplace_back('W', "");
        else if (std::strcmp(a, "-h") == 0 || std::strcmp(a, "--help") == 0) o.help = true;
        else if (std::strcmp(a, "--list-devices") == 0) o.list_devices = true;
        else if (std::strcmp(a, "--validate") == 0) o.validate = true;
        else if (std::strcmp(a, "--kernel") == 0) o.kernel = true;
        else if (std::strcmp(a, "-f") == 0 && o.kernel) {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s: '-f' needs the connection file\n", progname);
                return false;
            }
            o.connection_file = argv[++i];
        }
        else if (std::strncmp(a, "--device=", 9) == 0) o.device = a + 9;
        else if (std::strcmp(a, "--device") == 0) {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s: '--device' needs an argument\n", progname);
                print_usage(stderr);
                return false;
            }
            o.device = argv[++i];
        } else if (a[1] == 'e' || a[1] == 'l') {
            const char* value = a + 2;
            if (*value == '\0') {
                if (i + 1 >= argc || argv[i + 1][0] == '-') {
                    std::fprintf(stderr, "%s: '%s' needs argument\n", progname, a);
                    print_usage(stderr);
                    return false;
                }
                value = argv[++i];
            }
            if (a[1] == 'e') o.has_e = true;
            o.actions.emplace_back(a[1], value);
        } else {
            std::fprintf(stderr, "%s: unrecognized option '%s'\n", progname, a);
            print_usage(stderr);
            return false;
        }
    }
    o.script = i;
    return true;
}

// arg as lua.c makes it: arg[0] the script, its arguments at 1..n, the
// interpreter and its options at negative indices.
void create_arg_table(lua_State* L, int argc, char** argv, int script) {
    if (script == argc) script = 0;
    lua_createtable(L, argc - (script + 1), script + 1);
    for (int i = 0; i < argc; ++i) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i - script);
    }
    lua_setglobal(L, "arg");
}

int dochunk(lua_State* L, int status) {
    if (status == LUA_OK) status = vela::repl::docall(L, 0, 0);
    return vela::repl::report(L, status, progname);
}

// -l mod requires mod into the global mod; -l g=mod into the global g (as
// lua.c of Lua 5.4.4 and later).
int dolibrary(lua_State* L, const char* arg) {
    std::string global = arg, module = arg;
    if (size_t eq = global.find('='); eq != std::string::npos) {
        module = global.substr(eq + 1);
        global.resize(eq);
    }
    lua_getglobal(L, "require");
    lua_pushlstring(L, module.data(), module.size());
    int status = vela::repl::docall(L, 1, 1);
    if (status == LUA_OK) lua_setglobal(L, global.c_str());
    return vela::repl::report(L, status, progname);
}

// LUA_INIT_5_4, else LUA_INIT: "@file" runs the file, anything else runs as
// code, before the options' chunks (lua.c's handle_luainit).
int handle_luainit(lua_State* L) {
    const char* name = "=LUA_INIT_" LUA_VERSION_MAJOR "_" LUA_VERSION_MINOR;
    const char* init = std::getenv(name + 1);
    if (!init) {
        name = "=LUA_INIT";
        init = std::getenv(name + 1);
    }
    if (!init) return LUA_OK;
    if (init[0] == '@') return dochunk(L, luaL_loadfile(L, init + 1));
    return dochunk(L, luaL_loadbuffer(L, init, std::strlen(init), name));
}

int handle_script(lua_State* L, char** argv, int script) {
    const char* fname = argv[script];
    if (std::strcmp(fname, "-") == 0 && (script == 0 || std::strcmp(argv[script - 1], "--") != 0))
        fname = nullptr;  // stdin
    int status = luaL_loadfile(L, fname);
    if (status == LUA_OK) {
        lua_getglobal(L, "arg");
        int n = int(luaL_len(L, -1));
        luaL_checkstack(L, n + 3, "too many arguments to script");
        for (int i = 1; i <= n; ++i) lua_rawgeti(L, -i, i);
        lua_remove(L, -n - 1);
        status = vela::repl::docall(L, n, 0);
    }
    return vela::repl::report(L, status, progname);
}

// --list-devices prints what devices() returns, as the prompt shows it.
int list_devices(lua_State* L) {
    const char* code = "print(vela.devices())";
    return dochunk(L, luaL_loadbuffer(L, code, std::strlen(code), "=--list-devices")) == LUA_OK ? EXIT_SUCCESS
                                                                                          : EXIT_FAILURE;
}

// glslang's start-up (about 30 ms of CPU, once per process) begins on a
// background thread where kernels written at the prompt are likely: at the
// prompt, and when a -e chunk or the script mentions map or kernel; their
// first compile then finds it done. Other runs never pay for it.
bool mentions_kernels(const std::string& text) {
    return text.find("map") != std::string::npos || text.find("kernel") != std::string::npos;
}
void start_compiler_if_likely(const Options& o, int argc, char** argv) {
    bool prompt = o.interactive || (o.script == argc && !o.has_e && !o.version && isatty(0));
    bool likely = prompt;
    for (auto [opt, value] : o.actions) likely = likely || (opt == 'e' && mentions_kernels(value));
    if (!likely && o.script < argc && std::strcmp(argv[o.script], "-") != 0) {
        std::ifstream in(argv[o.script], std::ios::binary);
        likely = in && mentions_kernels(std::string(std::istreambuf_iterator<char>(in), {}));
    }
    if (likely) vela::userk::start_compiler();
}

// --kernel and --install-kernel need the build's Jupyter support (xeus).
int jupyter(lua_State* L, const Options& o, int argc, char** argv) {
#ifdef VELA_JUPYTER
    if (!o.kernel) return vela::jupyter::install_kernel(argc, argv);
    if (o.connection_file.empty()) {
        std::fprintf(stderr, "%s: --kernel needs -f CONNECTION_FILE\n", progname);
        return EXIT_FAILURE;
    }
    return vela::jupyter::run_kernel(L, o.connection_file);
#else
    (void)L, (void)o, (void)argc, (void)argv;
    std::fprintf(stderr, "%s: built without Jupyter support (install xeus-dev, then rebuild)\n", progname);
    return EXIT_FAILURE;
#endif
}

int run(lua_State* L, int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "--install-kernel") == 0) return jupyter(L, Options{}, argc - 2, argv + 2);
    Options o;
    if (!collect_args(argc, argv, o)) return EXIT_FAILURE;
#ifdef VELA_JUPYTER
    if (o.kernel) vela::jupyter::block_interrupts();  // before any thread starts (jupyter/kernel.cpp)
#endif
    if (o.help) {
        print_usage(stdout);
        return EXIT_SUCCESS;
    }
    // --validate is VELA_VALIDATE=1: set in the environment too, so the
    // Vulkan side reads the same choice however it first asks (and processes
    // started from the script inherit it), then turned on before any device opens.
    if (o.validate) setenv("VELA_VALIDATE", "1", 1);
    const char* env_validate = std::getenv("VELA_VALIDATE");
    if (env_validate && *env_validate && std::strcmp(env_validate, "0") != 0) vela::set_vulkan_validation(true);
    if (o.version) print_version();

    if (o.no_env) {  // package.path and cpath then ignore LUA_PATH and LUA_CPATH, as in lua.c
        unsetenv("VELA_DEVICE");  // read again where the default device is chosen
        lua_pushboolean(L, 1);
        lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
    }
    if (!vela::repl::setup_state(L)) return EXIT_FAILURE;
    if (o.device.empty() && !o.no_env)
        if (const char* env = std::getenv("VELA_DEVICE")) o.device = env;
    if (!o.device.empty()) {
        try {
            vela::set_current_device(vela::get_device(o.device));
        } catch (const vela::Error& e) {
            std::fprintf(stderr, "%s: %s\n", progname, e.what());
            return EXIT_FAILURE;
        }
    }
    if (o.list_devices) return list_devices(L);
    if (o.kernel) return jupyter(L, o, argc, argv);

    start_compiler_if_likely(o, argc, argv);
    create_arg_table(L, argc, argv, o.script);
    if (!o.no_env && handle_luainit(L) != LUA_OK) return EXIT_FAILURE;
    for (auto [opt, value] : o.actions) {
        int status = LUA_OK;
        if (opt == 'e') status = dochunk(L, luaL_loadbuffer(L, value, std::strlen(value), "=(command line)"));
        else if (opt == 'l') status = dolibrary(L, value);
        else lua_warning(L, "@on", 0);  // -W
        if (status != LUA_OK) return EXIT_FAILURE;
    }
    if (o.script < argc && handle_script(L, argv, o.script) != LUA_OK) return EXIT_FAILURE;

    if (o.interactive) {
        vela::repl::run_repl(L);
    } else if (o.script == argc && !o.has_e && !o.version) {
        if (isatty(0)) {
            vela::repl::print_banner();
            vela::repl::run_repl(L);
        } else if (dochunk(L, luaL_loadfile(L, nullptr)) != LUA_OK) {
            return EXIT_FAILURE;
        }
    }
    return EXIT_SUCCESS;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 0 && argv[0] && argv[0][0]) {
        const char* slash = std::strrchr(argv[0], '/');
        progname = slash ? slash + 1 : argv[0];
    }
    // VELA_CPU_ISA naming loops this CPU cannot run (or no path): say so once, run nothing.
    if (const std::string& why = vela::cpu::isa_choice().error; !why.empty()) {
        std::fprintf(stderr, "%s: %s\n", progname, why.c_str());
        return EXIT_FAILURE;
    }
    vela::cpu::ensure_blas_core();  // while the process has one thread (cpu/blas_core.hpp)
    vela::register_backends();
    lua_State* L = luaL_newstate();
    if (!L) {
        std::fprintf(stderr, "%s: cannot create state: not enough memory\n", progname);
        return EXIT_FAILURE;
    }
    int rc = run(L, argc, argv);
    std::fflush(stdout);
    // Queued device work finishes before the state (and its matrices) goes:
    // nothing is in flight while the devices are torn down.
    for (vela::Device* d : vela::open_devices()) {
        try {
            d->sync();
        } catch (const vela::Error& e) {
            std::fprintf(stderr, "%s: %s: %s\n", progname, d->name().c_str(), e.what());
            if (rc == EXIT_SUCCESS) rc = EXIT_FAILURE;  // work the script queued failed (e.g. a bad label)
        }
    }
    lua_close(L);
    return rc;
}
