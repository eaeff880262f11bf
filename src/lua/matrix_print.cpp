// Printing a matrix: its __tostring shows the shape, dtype and device and
// the values, whole up to printopts' threshold (1,000 elements), else the
// corners (downloading just those blocks); printopts sets how.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/ops.hpp"
#include "lua/check.hpp"
#include "lua/text.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

// The printing options, set by printopts{...} (as torch.set_printoptions
// and numpy.set_printoptions): a matrix of up to `threshold` elements prints
// whole; a larger one shows its first and last rows/2 rows and cols/2
// columns with ⋮ ⋯ ⋱ between (only those blocks are downloaded); `full`
// prints everything; `precision` significant digits. When the shown values
// are not all integers and their magnitudes differ widely (the largest at
// least 10⁵ times the smallest, or ≥ 10⁵, or < 10⁻³), a scale line such as
// "1e+06 *" comes first and the values are printed divided by it, as Torch7
// prints them. No line is wider than `linewidth` (0: the screen's width,
// text.hpp's screen_width): wider rows print in blocks of columns, each
// under a "Columns 3 to 5" line, as Torch7 prints them.
struct PrintOptions {
    int64_t rows = 6, cols = 6, threshold = 1000, precision = 6, linewidth = 0;
    bool full = false;
};
static PrintOptions opts;

struct Span {  // the shown indices of one dimension: [0, a) then [b, n)
    int64_t a, b, n;
    bool elided() const { return b > a; }
    int64_t count() const { return a + (n - b); }
};

static Span span(int64_t n, int64_t shown, bool whole) {
    if (whole || n <= shown) return Span{n, n, n};
    int64_t head = (shown + 1) / 2, tail = shown / 2;
    return Span{head, n - tail, n};
}

static void add_padded(luaL_Buffer* b, const char* s, size_t width, size_t len) {
    for (size_t k = len; k < width; k++) luaL_addchar(b, ' ');
    luaL_addlstring(b, s, std::strlen(s));
}

int matrix_tostring(lua_State* L) {
    Matrix& m = check_matrix(L, 1);
    bool whole = opts.full || m.size() <= opts.threshold;
    Span rs = span(m.rows, opts.rows, whole), cs = span(m.cols, opts.cols, whole);
    int64_t nr_shown = rs.count(), nc_shown = cs.count();
    // The cells are formatted inside guarded() (the C++ objects live and die
    // there) into one userdata, made before the Lua buffer (whose stack use
    // must stay balanced); the GC frees it.
    size_t ncell = size_t(nr_shown * nc_shown);
    struct Cells {
        char scale[32];
        size_t width;
    };
    constexpr size_t kCell = 28;
    auto* cells = static_cast<Cells*>(lua_newuserdatauv(L, sizeof(Cells) + ncell * kCell, 0));
    char* text = reinterpret_cast<char*>(cells + 1);
    int keep = lua_gettop(L);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    if (!m.buf) {
        luaL_addstring(&b, "matrix (collected)");
        luaL_pushresult(&b);
        lua_remove(L, keep);
        return 1;
    }
    lua_pushfstring(L, "matrix %I×%I %s on ", lua_Integer(m.rows), lua_Integer(m.cols), dtype_name(m.dtype()));
    luaL_addvalue(&b);
    push_device_name(L, m.device());
    luaL_addvalue(&b);
    if (m.buf->released()) {
        luaL_addstring(&b, " (released)");
        luaL_pushresult(&b);
        lua_remove(L, keep);
        return 1;
    }
    if (m.empty()) {
        luaL_pushresult(&b);
        lua_remove(L, keep);
        return 1;
    }
    guarded(L, [&] {
        std::vector<float> grid(ncell);
        int64_t rblock[2][2] = {{0, rs.a}, {rs.b, m.rows - rs.b}};
        int64_t cblock[2][2] = {{0, cs.a}, {cs.b, m.cols - cs.b}};
        for (int bi = 0; bi < (rs.elided() ? 2 : 1); bi++)
            for (int bj = 0; bj < (cs.elided() ? 2 : 1); bj++) {
                int64_t r0 = rblock[bi][0], nr = rblock[bi][1], c0 = cblock[bj][0], nc = cblock[bj][1];
                if (nr == 0 || nc == 0) continue;
                std::vector<float> v;
                try {
                    v = to_host(view(m, r0, c0, nr, nc));
                } catch (const Interrupted&) {
                    throw;
                } catch (const Error& e) {
                    // print(m) reads the matrix: a read error (an earlier call's label error on
                    // Vulkan) names it, as a metamethod has no name of its own
                    throw Error(std::string("tostring(m): ") + e.what());
                }
                for (int64_t j = 0; j < nc; j++)
                    for (int64_t i = 0; i < nr; i++)
                        grid[size_t((bi * rs.a + i) * nc_shown + bj * cs.a + j)] = v[size_t(i + j * nr)];
            }
        bool integral = true;
        double maxabs = 0, minabs = HUGE_VAL;
        for (float f : grid) {
            if (!std::isfinite(f)) continue;
            double a = std::fabs(double(f));
            if (a != std::floor(a)) integral = false;
            if (a > maxabs) maxabs = a;
            if (a > 0 && a < minabs) minabs = a;
        }
        double scale = 1;
        cells->scale[0] = '\0';
        if (!integral && maxabs > 0 && (maxabs >= 1e5 || maxabs < 1e-3 || maxabs >= 1e5 * minabs)) {
            scale = std::pow(10.0, std::floor(std::log10(maxabs) + 1e-6));  // float 1e-4 is 0.99999997e-4
            std::snprintf(cells->scale, sizeof cells->scale, "%.0e *", scale);
        }
        int prec = int(std::clamp<int64_t>(opts.precision, 1, 17));
        int decimals = std::max(1, prec - 2);
        size_t width = 1;
        for (size_t k = 0; k < ncell; k++) {
            char* t = text + k * kCell;
            int len = scale != 1 ? std::snprintf(t, kCell, "%.*f", decimals, double(grid[k]) / scale)
                                 : std::snprintf(t, kCell, "%.*g", prec, double(grid[k]));
            width = std::max(width, size_t(std::min(len, 27)));
        }
        cells->width = width;
    });
    size_t width = cells->width;
    if (cells->scale[0]) {
        luaL_addstring(&b, "\n  ");
        luaL_addstring(&b, cells->scale);
    }
    auto cell = [&](int64_t i, int64_t j) { return text + size_t(i * nc_shown + j) * kCell; };
    // Blocks of shown columns [j0, j1), each as wide as the line allows: a
    // column takes 2 + width cells, the ⋯ before the elided tail 3 more.
    size_t line = opts.linewidth > 0 ? size_t(opts.linewidth) : screen_width();
    std::vector<int64_t> starts{0};
    for (int64_t j = 0, used = 0; j < nc_shown; j++) {
        int64_t need = int64_t(width) + 2 + (cs.elided() && j == cs.a ? 3 : 0);
        if (used > 0 && size_t(used + need) > line) starts.push_back(j), used = need - (cs.elided() && j == cs.a ? 3 : 0);
        else used += need;
    }
    starts.push_back(nc_shown);
    auto real = [&](int64_t j) { return lua_Integer(j < cs.a ? j + 1 : cs.b + (j - cs.a) + 1); };
    for (size_t blk = 0; blk + 1 < starts.size(); blk++) {
        int64_t j0 = starts[blk], j1 = starts[blk + 1];
        if (starts.size() > 2) {
            lua_pushfstring(L, "%s\nColumns %I to %I", blk ? "\n" : "", real(j0), real(j1 - 1));
            luaL_addvalue(&b);
        }
        for (int64_t i = 0; i < nr_shown; i++) {
            if (rs.elided() && i == rs.a) {
                luaL_addchar(&b, '\n');
                for (int64_t j = j0; j < j1; j++) {
                    if (cs.elided() && j == cs.a && j > j0) luaL_addstring(&b, "  ⋱");
                    luaL_addstring(&b, "  ");
                    add_padded(&b, "⋮", width, 1);
                }
            }
            luaL_addchar(&b, '\n');
            for (int64_t j = j0; j < j1; j++) {
                if (cs.elided() && j == cs.a && j > j0) luaL_addstring(&b, "  ⋯");
                luaL_addstring(&b, "  ");
                add_padded(&b, cell(i, j), width, std::strlen(cell(i, j)));
            }
        }
    }
    luaL_pushresult(&b);
    lua_remove(L, keep);
    return 1;
}

static void push_options(lua_State* L) {
    lua_createtable(L, 0, 6);
    lua_pushinteger(L, opts.rows), lua_setfield(L, -2, "rows");
    lua_pushinteger(L, opts.cols), lua_setfield(L, -2, "cols");
    lua_pushinteger(L, opts.threshold), lua_setfield(L, -2, "threshold");
    lua_pushinteger(L, opts.precision), lua_setfield(L, -2, "precision");
    lua_pushinteger(L, opts.linewidth), lua_setfield(L, -2, "linewidth");
    lua_pushboolean(L, opts.full), lua_setfield(L, -2, "full");
}

// printopts([{rows =, cols =, threshold =, precision =, full =}] | "default") -> the options now
static int l_printopts(lua_State* L) {
    check_nargs(L, 1);
    if (lua_type(L, 1) == LUA_TSTRING) {
        if (std::strcmp(lua_tostring(L, 1), "default") != 0)
            return luaL_error(L, "printopts: the only string is \"default\", got \"%s\"", lua_tostring(L, 1));
        opts = PrintOptions{};
    } else if (!lua_isnoneornil(L, 1)) {
        luaL_checktype(L, 1, LUA_TTABLE);
        check_option_keys(L, 1, "printopts", {"rows", "cols", "threshold", "precision", "linewidth", "full"});
        PrintOptions o = opts;
        lua_pushnil(L);
        while (lua_next(L, 1)) {
            const char* k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "?";
            int64_t* field = std::strcmp(k, "rows") == 0        ? &o.rows
                             : std::strcmp(k, "cols") == 0      ? &o.cols
                             : std::strcmp(k, "threshold") == 0 ? &o.threshold
                             : std::strcmp(k, "precision") == 0 ? &o.precision
                             : std::strcmp(k, "linewidth") == 0 ? &o.linewidth
                                                                : nullptr;
            if (field) {
                bool zero_ok = field == &o.threshold || field == &o.linewidth;
                if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < (zero_ok ? 0 : 1) ||
                    (field == &o.linewidth && lua_tointeger(L, -1) > 0 && lua_tointeger(L, -1) < 20))
                    return luaL_error(L, "printopts: %s must be %s, got %s", k,
                                      field == &o.linewidth ? "0 (the screen's width) or at least 20"
                                      : zero_ok             ? "a non-negative integer"
                                                            : "a positive integer",
                                      luaL_tolstring(L, -1, nullptr));
                *field = lua_tointeger(L, -1);
                if (field == &o.precision && *field > 17) *field = 17;
            } else if (std::strcmp(k, "full") == 0) {
                o.full = lua_toboolean(L, -1);
            } else {
                return luaL_error(L, "printopts: unknown option '%s' (rows, cols, threshold, precision, full)", k);
            }
            lua_pop(L, 1);
        }
        opts = o;
    }
    push_options(L);
    return 1;
}

void open_print(lua_State* L) {
    lua_pushcfunction(L, l_printopts);
    lua_setfield(L, -2, "printopts");
    doc("printopts", "printopts([{rows = 6, cols = 6, threshold = 1000, precision = 6, linewidth = 0, full = false}] | \"default\") -> options",
        "How matrices print (torch.set_printoptions, numpy.set_printoptions): up to `threshold` elements print "
        "whole; a larger matrix shows its first and last rows/2 rows and cols/2 columns; full = true prints "
        "everything; precision is in significant digits. Values of widely different magnitudes print under a "
        "scale line (\"1e+06 *\"), as Torch7 prints them. No line is wider than linewidth (0: the "
        "terminal's width, else $COLUMNS, else 80): wider rows print in blocks of columns under \"Columns 1 to 8\" "
        "lines, as Torch7 prints them (numpy's linewidth). printopts(\"default\") restores these; printopts() "
        "returns the options now.");
}

}  // namespace vela::lua
