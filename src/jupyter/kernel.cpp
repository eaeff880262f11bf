// The interpreter behind vela's Jupyter kernel: xeus 2.4's xinterpreter over
// the shell's Lua state. Each request maps onto what the shell already does:
// execute is the prompt's read-run-print (cell.cpp reads, repl::docall runs,
// rich.cpp prints), complete is repl::complete, inspect is ?name, is_complete
// is the prompt's continuation rule.
//
// Interrupts: Jupyter interrupts a kernel with SIGINT to the process, and the
// shell's mechanism (repl/call.cpp) handles it while a cell runs. Between cells
// the main thread waits in zmq_poll, which a signal handler would end with
// EINTR (and cppzmq turns that into an exception that ends the kernel), so
// SIGINT is blocked on the main thread except while a cell runs, and an
// interrupt that arrived while idle is dropped when the next cell starts.
#include "jupyter/kernel.hpp"

#include <pthread.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>
#include <xeus/xhelper.hpp>
#include <xeus/xinterpreter.hpp>
#include <xeus/xkernel.hpp>
#include <xeus/xkernel_configuration.hpp>
#include <xeus/xserver_zmq.hpp>

#include "core/error.hpp"
#include "jupyter/capture.hpp"
#include "jupyter/publish.hpp"
#include "repl/repl.hpp"

namespace nl = nlohmann;

namespace vela::jupyter {

namespace {

sigset_t sigint_set() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    return s;
}

// While a cell runs: SIGINT reaches the Lua thread; an interrupt left over
// from before the cell is dropped first.
void allow_interrupts(bool on) {
    sigset_t s = sigint_set();
    if (on) {
        timespec zero{0, 0};
        while (sigtimedwait(&s, nullptr, &zero) > 0) {
        }
        vela::interrupt_flag().store(false);
    }
    pthread_sigmask(on ? SIG_UNBLOCK : SIG_BLOCK, &s, nullptr);
}

bool ident_char(char c) {
    return isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':';
}

class Interpreter;
Interpreter* current = nullptr;

class Interpreter : public xeus::xinterpreter {
public:
    explicit Interpreter(lua_State* L) : L_(L) { current = this; }
    ~Interpreter() override { current = nullptr; }

    void display(const nl::json& data, const std::string& id, bool update) {
        capture_->publish([&] {
            nl::json transient = nl::json::object();
            if (!id.empty()) transient["display_id"] = id;
            if (update)
                update_display_data(data, nl::json::object(), transient);
            else
                display_data(data, nl::json::object(), transient);
        });
    }

private:
    void configure_impl() override {
        capture_ = std::make_unique<Capture>(
            [this](const std::string& stream, const std::string& text) { publish_stream(stream, text); });
        open_rich(L_);
    }

    nl::json execute_request_impl(int n, const std::string& code, bool silent, bool, nl::json, bool) override {
        lua_settop(L_, 0);
        Cell cell;
        int status = load_cell(L_, code, "In[" + std::to_string(n) + "]", cell);
        if (status == LUA_OK) {
            int narg = 0;
            if (!cell.help.empty()) {
                lua_pushlstring(L_, cell.help.data(), cell.help.size());
                narg = 1;
            }
            allow_interrupts(true);
            status = repl::docall(L_, narg, LUA_MULTRET);
            allow_interrupts(false);
        }
        if (status != LUA_OK) {
            const char* m = lua_tostring(L_, -1);
            std::string msg = m ? m : "(error object is not a string)";
            lua_settop(L_, 0);
            repl::after_command(false);
            std::string ename = status == LUA_ERRSYNTAX                         ? "SyntaxError"
                                : msg.find("interrupted!") != std::string::npos ? "Interrupted"
                                                                                : "LuaError";
            // The message alone is the error's value; with the traceback the
            // shell's handler added, its traceback lines.
            std::string value = msg.substr(0, msg.find("\nstack traceback:"));
            std::vector<std::string> tb{msg};
            if (!silent) capture_->publish([&] { publish_execution_error(ename, value, tb); });
            capture_->drain();
            // Written out: xeus 2.4's create_error_reply swaps ename and evalue.
            return {{"status", "error"}, {"ename", ename}, {"evalue", value}, {"traceback", tb}};
        }
        int nres = lua_gettop(L_);
        if (cell.print && !silent && nres > 0) {
            nl::json data = results_bundle(nres);
            lua_pushvalue(L_, 1);
            lua_setglobal(L_, "_");
            capture_->publish([&] { publish_execution_result(n, data, nl::json::object()); });
        }
        lua_settop(L_, 0);
        repl::after_command(false);
        capture_->drain();
        return xeus::create_successful_reply();
    }

    // One value as its bundle; several as the prompt prints them on one line
    // (tab separated) or on several.
    nl::json results_bundle(int nres) {
        if (nres == 1) return mime_bundle(L_, 1);
        std::string out;
        for (int i = 1; i <= nres; ++i) {
            std::string s = repl::show(L_, i);
            if (i > 1) out += (out.find('\n') != std::string::npos || s.find('\n') != std::string::npos) ? "\n" : "\t";
            out += s;
        }
        return {{"text/plain", out}};
    }

    nl::json complete_request_impl(const std::string& code, int cursor_pos) override {
        size_t cur = byte_offset(code, cursor_pos);
        size_t ls = cur == 0 ? std::string::npos : code.rfind('\n', cur - 1);
        ls = ls == std::string::npos ? 0 : ls + 1;
        size_t le = code.find('\n', cur);
        std::string line = code.substr(ls, (le == std::string::npos ? code.size() : le) - ls);
        int top = lua_gettop(L_);
        repl::Completion c = repl::complete(L_, line, int(cur - ls));
        lua_settop(L_, top);
        return xeus::create_complete_reply(c.words, code_points(code, ls + size_t(c.start)), cursor_pos);
    }

    nl::json inspect_request_impl(const std::string& code, int cursor_pos, int) override {
        size_t cur = byte_offset(code, cursor_pos), b = cur, e = cur;
        while (b > 0 && ident_char(code[b - 1])) --b;
        while (e < code.size() && ident_char(code[e])) ++e;
        std::string name = code.substr(b, e - b);
        while (!name.empty() && (name.back() == '.' || name.back() == ':')) name.pop_back();
        if (name.empty()) return xeus::create_inspect_reply(false);
        std::string text = capture_->collect([&] {
            int top = lua_gettop(L_);
            lua_getglobal(L_, "help");
            lua_pushlstring(L_, name.data(), name.size());
            if (lua_pcall(L_, 1, 0, 0) != LUA_OK) std::printf("no help for '%s'\n", name.c_str());
            lua_settop(L_, top);
        });
        bool found = !text.empty() && text.rfind("no help for", 0) != 0;
        if (!found) return xeus::create_inspect_reply(false);
        return xeus::create_inspect_reply(true, {{"text/plain", text}});
    }

    nl::json is_complete_request_impl(const std::string& code) override {
        std::string status = completeness(L_, code);
        return xeus::create_is_complete_reply(status, status == "incomplete" ? "  " : "");
    }

    nl::json kernel_info_request_impl() override {
        std::string banner =
            std::string("vela ") + VELA_VERSION + " (" + LUA_RELEASE + "): help() lists topics, ?name explains one";
        return xeus::create_info_reply("5.3", "vela", VELA_VERSION, "lua", LUA_VERSION_MAJOR "." LUA_VERSION_MINOR,
                                       "text/x-lua", ".lua", "lua", "lua", "", banner);
    }

    void shutdown_request_impl() override {}

    lua_State* L_;
    std::unique_ptr<Capture> capture_;
};

}  // namespace

void publish_display(const nl::json& data, const std::string& id, bool update) {
    if (current) current->display(data, id, update);
}

void block_interrupts() {
    sigset_t s = sigint_set();
    pthread_sigmask(SIG_BLOCK, &s, nullptr);
}

int run_kernel(lua_State* L, const std::string& connection_file) {
    if (FILE* f = std::fopen(connection_file.c_str(), "r")) {
        std::fclose(f);
    } else {
        std::fprintf(stderr, "vela --kernel: cannot read the connection file '%s': %s\n", connection_file.c_str(),
                     std::strerror(errno));
        return EXIT_FAILURE;
    }
    try {
        xeus::xconfiguration config = xeus::load_configuration(connection_file);
        auto context = xeus::make_context<zmq::context_t>();
        repl::InterruptScope session;  // between cells an interrupt only sets the flag
        xeus::xkernel kernel(config, xeus::get_user_name(), std::move(context), std::make_unique<Interpreter>(L),
                             xeus::make_xserver_zmq, xeus::make_in_memory_history_manager(), nullptr,
                             xeus::make_null_debugger, nl::json::object(), nl::json::error_handler_t::replace);
        kernel.start();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vela --kernel: %s\n", e.what());
        return EXIT_FAILURE;
    }
    return EXIT_SUCCESS;
}

}  // namespace vela::jupyter
