// help(x), ?name and vela.doc: documentation registered beside each binding.
//
// The registry maps a name as the user types it ("mm", "Matrix:view",
// "nn.linear") to a signature and a text. help(f) on a function value finds
// its entry by resolving each registered name to the value it names now and
// comparing; the matches are cached in a weak table, so help(mm), help "mm"
// and ?mm agree, and a Lua module's functions documented with vela.doc are
// found the same way. The registry, that lookup and vela.doc are in
// help_registry.cpp; this file is help(): the index, one entry, a module.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "lua/help.hpp"
#include "lua/help_registry.hpp"
#include "lua/text.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

namespace {

using help::Entry;
using help::l_doc;
using help::name_of;
using help::registry;
using help::split_name;

// Names users of Torch7 and PyTorch reach for, and where vela keeps them.
struct Synonym {
    const char* theirs;
    const char* ours;
};
const Synonym synonyms[] = {
    {"addmm", "mm"},        {"matmul", "mm"},          {"gemm", "mm"},
    {"addmv", "mv"},        {"gemv", "mv"},            {"addr", "rk"},
    {"ger", "rk"},          {"cmul", "mul"},           {"cdiv", "div"},
    {"mul_", "scal"},       {"zero_", "fill"},         {"fill_", "fill"},
    {"iamax", "imax"},      {"uniform_", "rand"},      {"normal_", "randn"},
    {"manualSeed", "seed"}, {"manual_seed", "seed"},   {"synchronize", "sync"},
    {"swapaxes", "transpose"}, {"swapdims", "transpose"}, {"contiguous", "clone"},
    {"cuda", "Matrix:to"},  {"float", "Matrix:to"},    {"index_select", "gather_cols"},
};

// The areas help() lists, in order. Only names that are documented show.
struct Area {
    const char* title;
    std::vector<const char*> names;
};
const std::vector<Area>& areas() {
    // The elementwise areas list the op table's rows (core/ops.def).
    static const std::vector<const char*> elementwise = [] {
        std::vector<const char*> v;
        for (uint8_t i = 0; i < uint8_t(Unary::count_); i++) {
            std::string n = unary_name(Unary(i));
            if (n.find("_prime") == std::string::npos) v.push_back(unary_name(Unary(i)));
        }
        for (const char* n : {"mul", "div", "add", "sub"}) v.push_back(n);
        return v;
    }();
    static const std::vector<const char*> derivatives = [] {
        std::vector<const char*> v;
        for (uint8_t i = 1; i < uint8_t(Act::count_); i++) v.push_back(unary_name(act_prime(Act(i))));
        for (uint8_t i = 1; i < uint8_t(Act::count_); i++) v.push_back(act_backward_name(Act(i)));
        return v;
    }();
    // The kernels' names join their area from the kernel table (core/kernels.def:
    // each row's labels, after the names listed here, unless listed to keep
    // their place); an area the table names and this list lacks comes last.
    static const std::vector<Area> a = [] {
        std::vector<Area> v = {
            {"matrices", {"matrix", "zeros", "ones", "rand", "randn", "from"}},  // rand, randn: random's labels
            {"shapes", {"clone", "item", "reshape", "transpose", "narrow", "cat", "eye", "linspace", "arange", "randperm"}},
            {"comparisons", {"gt", "lt", "ge", "le", "eq", "ne", "pow"}},
            {"level 3, 2", {}},
            {"level 1", {}},
            {"elementwise", elementwise},
            {"derivatives", derivatives},
            {"fused", {}},
            {"convolution", {}},
            {"optimizer steps", {}},
            {"at the prompt", {"map", "kernel", "kernel_info"}},  // GLSL kernels written by the user (user_kernels.cpp)
            {"random", {"seed"}},
            {"regularization", {}},
            {"sequence", {}},
            {"devices", {"devices", "device", "sync", "threads", "stats", "mem", "who"}},
            {"measuring", {"time", "bench", "profile", "compare", "clock"}},
            {"data", {"read_idx", "read_labels", "permutation"}},
            {"shell", {"help", "doc", "timing"}},
        };
        for (uint8_t k = 0; k < uint8_t(Kernel::count_); k++) {
            const KernelInfo& info = kernel_info(Kernel(k));
            if (!*info.area) continue;
            auto it = std::find_if(v.begin(), v.end(), [&](const Area& x) { return info.area == std::string(x.title); });
            if (it == v.end()) it = v.insert(v.end(), Area{info.area, {}});
            for (const char* w = info.labels; *w;) {  // "axpy axpby": one name per word
                const char* end = std::strchr(w, ' ');
                if (!end) end = w + std::strlen(w);
                const char* name = intern(std::string(w, end));
                auto same = [&](const char* n) { return std::strcmp(n, name) == 0; };
                if (std::none_of(it->names.begin(), it->names.end(), same)) it->names.push_back(name);
                w = *end ? end + 1 : end;
            }
        }
        return v;
    }();
    return a;
}

std::string synonyms_of(const std::string& name) {
    std::string out;
    for (const Synonym& s : synonyms)
        if (name == s.ours) out.append(out.empty() ? "" : ", ").append(s.theirs);
    return out;
}

// The width help's lines fit (the terminal's, $COLUMNS, or 80), less one
// column: a line that fills the last column makes some terminals wrap.
size_t help_width() { return std::max<size_t>(screen_width(), 40) - 1; }

// One paragraph (no newlines) broken between words into lines of at most
// `width` columns: the first line starts after `first` columns already
// used, the others after `indent` spaces (which the lines include). A word
// longer than a line is cut, so no line is wider.
std::vector<std::string> wrap(const std::string& para, size_t width, size_t first, size_t indent) {
    std::vector<std::string> lines;
    std::string line;
    size_t used = first, p = 0;
    auto flush = [&] {
        lines.push_back(line);
        line.assign(indent, ' ');
        used = indent;
    };
    while (p < para.size()) {
        size_t sp = para.find(' ', p);
        if (sp == std::string::npos) sp = para.size();
        std::string word = para.substr(p, sp - p);
        p = sp + 1;
        if (word.empty()) continue;
        bool fresh = used == (lines.empty() ? first : indent);
        if (!fresh && used + 1 + width_of(word) > width) flush(), fresh = true;
        if (used + width_of(word) > width) word = clip(word, width > used + 1 ? width - used : 2);
        if (!fresh) line += ' ', used++;
        line += word;
        used += width_of(word);
    }
    lines.push_back(line);
    return lines;
}

// Prints text indented by two spaces, each paragraph (line of the source
// text) wrapped to the screen between words.
void print_wrapped(const std::string& text) {
    size_t pos = 0;
    while (pos <= text.size() && !text.empty()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string::npos) nl = text.size();
        for (const std::string& l : wrap(text.substr(pos, nl - pos), help_width(), 2, 2))
            std::printf("%s%s\n", l.compare(0, 2, "  ") == 0 ? "" : "  ", l.c_str());
        pos = nl + 1;
    }
}

void print_entry(const std::string& name, const Entry& e) {
    for (const std::string& l : wrap(e.signature.empty() ? name : e.signature, help_width(), 0, 4))
        std::printf("%s\n", l.c_str());
    print_wrapped(e.text);
    // The synonyms, unless the text already names its Torch7/PyTorch twin.
    std::string syn = synonyms_of(name);
    if (!syn.empty() && e.text.find("orch") == std::string::npos) std::printf("  Torch7/PyTorch: %s\n", syn.c_str());
}

// Wraps `names` after a title column `col` wide, to the screen's width; a
// title as wide as the column goes on a line of its own (never cut).
void print_group(const std::string& title, const std::vector<std::string>& names, size_t col) {
    if (names.empty()) return;
    std::string joined;
    for (const std::string& n : names) joined.append(joined.empty() ? "" : " ").append(n);
    std::string head = title;
    if (width_of(title) + 1 > col) {
        std::printf("%s\n", title.c_str());
        head.clear();
    }
    head.resize(col, ' ');
    std::vector<std::string> lines = wrap(joined, help_width(), col, col);
    std::printf("%s%s\n", head.c_str(), lines[0].c_str());
    for (size_t i = 1; i < lines.size(); i++) std::printf("%s\n", lines[i].c_str());
}

using Group = std::pair<std::string, std::vector<std::string>>;

// Groups under one title each: a module's entries join an area of the same
// name (the area "data" and data.mnist's module) instead of a second section.
void add_group(std::vector<Group>& groups, const std::string& title, const std::vector<std::string>& names) {
    if (names.empty()) return;
    for (Group& g : groups)
        if (g.first == title) {
            g.second.insert(g.second.end(), names.begin(), names.end());
            return;
        }
    groups.emplace_back(title, names);
}

void list_topics() {
    const auto& docs = registry();
    std::set<std::string> listed;
    std::vector<Group> groups;
    for (const std::string& l : wrap(std::string("vela ") + VELA_VERSION +
                                          ": help(f), help \"name\" or ?name shows one entry; ??name a Lua "
                                          "function's source; help(nn) a module.",
                                      help_width(), 0, 0))
        std::printf("%s\n", l.c_str());
    std::printf("\n");
    for (const Area& a : areas()) {
        std::vector<std::string> names;
        for (const char* n : a.names)
            if (docs.count(n) && listed.insert(n).second) names.push_back(n);
        add_group(groups, a.title, names);
    }
    // Prefixed names group by their owner: Matrix methods, then each module.
    std::map<std::string, std::vector<std::string>> owners;
    std::vector<std::string> other;
    for (const auto& [name, e] : docs) {
        if (listed.count(name)) continue;
        std::string owner, field;
        char sep;
        if (split_name(name, owner, field, sep)) {
            std::string shown = name;
            if (owner == "Matrix") shown = std::string("m").append(1, sep).append(field);
            owners[owner].push_back(shown);
        } else {
            other.push_back(name);
        }
    }
    if (owners.count("Matrix")) add_group(groups, "Matrix", owners["Matrix"]);
    for (const auto& [owner, names] : owners)
        if (owner != "Matrix") add_group(groups, owner, names);
    add_group(groups, "other", other);
    // The title column fits the longest title up to 18; a longer one takes its own line.
    size_t col = 10;
    for (const Group& g : groups) col = std::max(col, std::min<size_t>(width_of(g.first) + 2, 18));
    for (const Group& g : groups) print_group(g.first, g.second, col);
}

// Entries under a module or class name: "nn" lists nn.*, "Matrix" Matrix:*.
bool list_owner(const std::string& owner) {
    std::vector<std::string> names;
    for (const auto& [name, e] : registry())
        if (name.size() > owner.size() && name.compare(0, owner.size(), owner) == 0 &&
            (name[owner.size()] == '.' || name[owner.size()] == ':'))
            names.push_back(name);
    if (names.empty()) return false;
    for (const std::string& n : names) {
        const Entry& e = registry().at(n);
        std::string first = e.text.substr(0, e.text.find('\n'));
        // Pad by display width, not bytes: signatures hold × and other multi-byte
        // characters. The text wraps under its column; after a signature too long
        // for the column (or on a narrow screen) it starts on the next line.
        const std::string& sig = e.signature.empty() ? n : e.signature;
        size_t w = width_of(sig), col = help_width() >= 70 ? 35 : 4;
        std::vector<std::string> sig_lines = wrap(sig, help_width(), 0, 4);
        for (size_t i = 0; i + 1 < sig_lines.size(); i++) std::printf("%s\n", sig_lines[i].c_str());
        w = width_of(sig_lines.back());
        std::vector<std::string> text = wrap(first, help_width(), w + 1 <= col ? col : help_width(), col);
        if (w + 1 <= col) {
            std::printf("%s%s%s\n", sig_lines.back().c_str(), std::string(col - w, ' ').c_str(), text[0].c_str());
        } else {
            std::printf("%s\n", sig_lines.back().c_str());
            text = wrap(first, help_width(), col, col);
            std::printf("%s%s\n", std::string(col, ' ').c_str(), text[0].c_str());
        }
        for (size_t i = 1; i < text.size(); i++) std::printf("%s\n", text[i].c_str());
    }
    return true;
}

bool help_name(std::string name) {
    if (name.compare(0, 5, "vela.") == 0 && name.size() > 5) name = name.substr(5);
    const auto& docs = registry();
    if (auto it = docs.find(name); it != docs.end()) {
        print_entry(it->first, it->second);
        return true;
    }
    for (const Synonym& s : synonyms) {
        if (name == s.theirs && docs.count(s.ours)) {
            std::printf("(%s is called %s in vela)\n", s.theirs, s.ours);
            print_entry(s.ours, docs.at(s.ours));
            return true;
        }
    }
    if (list_owner(name)) return true;
    // "view" or "m:view": every entry whose last part matches.
    std::string tail = name.substr(name.find_last_of(".:") == std::string::npos ? 0 : name.find_last_of(".:") + 1);
    bool any = false;
    for (const auto& [n, e] : docs) {
        size_t p = n.find_last_of(".:");
        if (p != std::string::npos && n.substr(p + 1) == tail) {
            if (any) std::printf("\n");
            print_entry(n, e);
            any = true;
        }
    }
    return any;
}

// The global name under which a table is reachable, for help(nn).
std::string global_name_of(lua_State* L, int idx) {
    std::string found;
    lua_pushglobaltable(L);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        if (lua_type(L, -2) == LUA_TSTRING && lua_rawequal(L, -1, idx)) {
            found = lua_tostring(L, -2);
            lua_pop(L, 2);
            break;
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return found;
}

// ??name (help(name, "source")): the Lua source of a Lua function, read from
// its file between the lines the debug info gives; a built-in says so.
void show_source(lua_State* L) {
    std::string name = lua_type(L, 1) == LUA_TSTRING ? lua_tostring(L, 1) : name_of(L, 1);
    if (lua_type(L, 1) == LUA_TSTRING) help::push_named(L, name);
    else lua_pushvalue(L, 1);
    if (name.empty()) name = "this function";
    if (!lua_isfunction(L, -1)) {
        std::printf("??%s: %s\n", name.c_str(),
                    lua_isnil(L, -1) ? "no function of that name (help() lists every topic)" : "not a function");
        lua_pop(L, 1);
        return;
    }
    lua_Debug ar;
    lua_getinfo(L, ">S", &ar);
    if (ar.what[0] == 'C') {
        std::printf("%s is built in (C++): no Lua source to show; its documentation:\n", name.c_str());
        if (registry().count(name)) print_entry(name, registry().at(name));
        return;
    }
    FILE* f = ar.source[0] == '@' ? std::fopen(ar.source + 1, "r") : nullptr;
    if (!f) {
        std::printf("%s was defined at %s:%d; its source is not kept (typed at the prompt or loaded from a string)\n",
                    name.c_str(), ar.short_src, ar.linedefined);
        return;
    }
    std::printf("-- %s, %s:%d-%d\n", name.c_str(), ar.source + 1, ar.linedefined, ar.lastlinedefined);
    char buf[4096];
    int line = 0;
    bool at_start = true;
    while (std::fgets(buf, sizeof buf, f)) {
        if (at_start) line++;
        at_start = std::strchr(buf, '\n') != nullptr;
        if (line >= ar.linedefined && line <= ar.lastlinedefined) std::fputs(buf, stdout);
        if (line > ar.lastlinedefined) break;
    }
    std::fclose(f);
}

// "m:shape" (or "m.shape") where the global m holds a vela userdata (a
// matrix, a device): the entry of its class's method, "Matrix:shape".
// Empty when the name is not of that form or no such entry exists.
std::string method_of_value(lua_State* L, const std::string& name) {
    size_t sep = name.find_first_of(".:");
    if (sep == std::string::npos || sep == 0 || sep + 1 == name.size()) return "";
    std::string var = name.substr(0, sep), field = name.substr(sep + 1);
    auto ident = [](const std::string& w) {
        if (!std::isalpha((unsigned char)w[0]) && w[0] != '_') return false;
        for (char c : w)
            if (!std::isalnum((unsigned char)c) && c != '_') return false;
        return true;
    };
    if (!ident(var) || !ident(field)) return "";
    std::string cls;
    lua_getglobal(L, var.c_str());
    if (lua_type(L, -1) == LUA_TUSERDATA && luaL_getmetafield(L, -1, "__name") == LUA_TSTRING) {
        cls = lua_tostring(L, -1);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    if (cls.compare(0, 5, "vela.") != 0) return "";
    std::string entry = cls.substr(5) + ":" + field;
    return registry().count(entry) ? entry : "";
}

int l_help(lua_State* L) {
    if (lua_type(L, 2) == LUA_TSTRING && std::strcmp(lua_tostring(L, 2), "source") == 0) {
        show_source(L);
        return 0;
    }
    int t = lua_type(L, 1);
    if (t == LUA_TNONE) {
        list_topics();
        return 0;
    }
    if (t == LUA_TSTRING) {
        std::string name = lua_tostring(L, 1);
        if (std::string entry = method_of_value(L, name); !entry.empty()) {
            print_entry(entry, registry().at(entry));
            return 0;
        }
        if (!help_name(name)) {
            std::printf("no help for '%s'", name.c_str());
            std::vector<std::string> close;
            for (const auto& [n, e] : registry())
                if (n.find(name) != std::string::npos) close.push_back(n);
            if (!close.empty() && close.size() <= 12) {
                std::printf("; did you mean:");
                for (const std::string& c : close) std::printf(" %s", c.c_str());
            }
            std::printf("\n(help() lists every topic)\n");
        }
        return 0;
    }
    std::string name = name_of(L, 1);
    if (!name.empty()) {
        print_entry(name, registry().at(name));
        return 0;
    }
    if (t == LUA_TTABLE) {
        if (luaL_getmetatable(L, "vela.Matrix") && lua_rawequal(L, -1, 1)) {
            lua_pop(L, 1);
            list_owner("Matrix");
            return 0;
        }
        lua_pop(L, 1);
        std::string g = global_name_of(L, 1);
        if (!g.empty() && (g == "vela" ? (list_topics(), true) : list_owner(g))) return 0;
        // Undocumented: at least say what is in it.
        std::vector<std::string> fields;
        lua_pushnil(L);
        while (lua_next(L, 1)) {
            if (lua_type(L, -2) == LUA_TSTRING)
                fields.push_back(std::string(lua_tostring(L, -2)) + (lua_isfunction(L, -1) ? "()" : ""));
            lua_pop(L, 1);
        }
        std::sort(fields.begin(), fields.end());
        std::printf("%s has no documentation; its fields:\n", g.empty() ? "this table" : g.c_str());
        std::string line;
        for (const std::string& f : fields) line.append(line.empty() ? "" : " ").append(f);
        print_wrapped(line);
        return 0;
    }
    if (t == LUA_TUSERDATA && luaL_getmetafield(L, 1, "__name") == LUA_TSTRING) {
        std::string cls = lua_tostring(L, -1);
        lua_pop(L, 1);
        if (cls.compare(0, 5, "vela.") == 0) cls = cls.substr(5);
        if (list_owner(cls)) return 0;
    }
    if (t == LUA_TFUNCTION) {
        lua_Debug ar;
        lua_pushvalue(L, 1);
        lua_getinfo(L, ">S", &ar);
        if (ar.what[0] == 'C') std::printf("a built-in function without documentation\n");
        else std::printf("a Lua function defined at %s:%d, without documentation\n", ar.short_src, ar.linedefined);
        return 0;
    }
    std::printf("no help for a %s value (help() lists every topic)\n", luaL_typename(L, 1));
    return 0;
}

const luaL_Reg help_funcs[] = {
    {"help", l_help},
    {"doc", l_doc},
    {nullptr, nullptr},
};

}  // namespace

void open_help(lua_State* L) {
    luaL_setfuncs(L, help_funcs, 0);
    doc("help", "help([f | \"name\" | module] [, \"source\"])",
        "Prints the signature and documentation of f, or of the entry called name\n"
        "(?name at the prompt does the same); help(nn) lists a module, help() every topic, each wrapped to the\n"
        "terminal's width. help(f, \"source\") (??name at the prompt) prints the Lua source of a Lua function,\n"
        "e.g. ??nn.linear.");
    doc("doc", "vela.doc(name, signature, text [, fn])  |  vela.doc(fn) -> name  |  vela.doc(name) -> signature, text",
        "Registers documentation for Lua code, so help(fn) and ?name find it. With one argument it asks: the\n"
        "name a function is documented under, or a name's signature and text (nil when undocumented).");
}

}  // namespace vela::lua
