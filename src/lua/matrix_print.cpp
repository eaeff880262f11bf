// Printing a matrix: its __tostring shows the shape, dtype and device and
// the values, the corners only when it is larger than 6×6 (downloading just
// those blocks).
#include <cstdio>
#include <cstring>

#include "core/ops.hpp"
#include "lua/check.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

// Up to kShown rows (columns) print in full; beyond, the first and last kEdge
// with ⋮ (⋯) between them.
static constexpr int64_t kShown = 6, kEdge = 3;

struct Span {  // the shown indices of one dimension: [0, a) then [b, n)
    int64_t a, b, n;
    bool elided() const { return b > a; }
    int64_t count() const { return a + (n - b); }
    int64_t at(int64_t k) const { return k < a ? k : b + (k - a); }
};

static Span span(int64_t n) {
    return n <= kShown ? Span{n, n, n} : Span{kEdge, n - kEdge, n};
}

static void add_padded(luaL_Buffer* b, const char* s, size_t width, size_t len) {
    for (size_t k = len; k < width; k++) luaL_addchar(b, ' ');
    luaL_addlstring(b, s, std::strlen(s));
}

int matrix_tostring(lua_State* L) {
    Matrix& m = check_matrix(L, 1);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    if (!m.buf) {
        luaL_addstring(&b, "matrix (collected)");
        luaL_pushresult(&b);
        return 1;
    }
    lua_pushfstring(L, "matrix %I×%I %s on ", lua_Integer(m.rows), lua_Integer(m.cols), dtype_name(m.dtype()));
    luaL_addvalue(&b);
    push_device_name(L, m.device());
    luaL_addvalue(&b);
    if (m.buf->released()) {
        luaL_addstring(&b, " (released)");
        luaL_pushresult(&b);
        return 1;
    }
    if (m.empty()) {
        luaL_pushresult(&b);
        return 1;
    }
    // Download only the shown corners: at most four blocks of kEdge×kEdge or kShown×kShown.
    Span rs = span(m.rows), cs = span(m.cols);
    float grid[kShown][kShown];
    int64_t rblock[2][2] = {{0, rs.a}, {rs.b, m.rows - rs.b}};
    int64_t cblock[2][2] = {{0, cs.a}, {cs.b, m.cols - cs.b}};
    guarded(L, [&] {
        for (int bi = 0; bi < (rs.elided() ? 2 : 1); bi++)
            for (int bj = 0; bj < (cs.elided() ? 2 : 1); bj++) {
                int64_t r0 = rblock[bi][0], nr = rblock[bi][1], c0 = cblock[bj][0], nc = cblock[bj][1];
                std::vector<float> v = to_host(view(m, r0, c0, nr, nc));
                for (int64_t j = 0; j < nc; j++)
                    for (int64_t i = 0; i < nr; i++) grid[bi * rs.a + i][bj * cs.a + j] = v[size_t(i + j * nr)];
            }
    });
    char cell[kShown][kShown][24];
    size_t width = 1;
    for (int64_t i = 0; i < rs.count(); i++)
        for (int64_t j = 0; j < cs.count(); j++) {
            int len = std::snprintf(cell[i][j], sizeof cell[i][j], "%g", double(grid[i][j]));
            if (size_t(len) > width) width = size_t(len);
        }
    auto add_row = [&](int64_t i) {
        luaL_addchar(&b, '\n');
        for (int64_t j = 0; j < cs.count(); j++) {
            if (cs.elided() && j == cs.a) luaL_addstring(&b, "  ⋯");
            luaL_addstring(&b, "  ");
            if (i < 0)
                add_padded(&b, "⋮", width, 1);
            else
                add_padded(&b, cell[i][j], width, std::strlen(cell[i][j]));
        }
    };
    for (int64_t i = 0; i < rs.count(); i++) {
        if (rs.elided() && i == rs.a) {
            luaL_addchar(&b, '\n');
            for (int64_t j = 0; j < cs.count(); j++) {
                if (cs.elided() && j == cs.a) luaL_addstring(&b, "  ⋱");
                luaL_addstring(&b, "  ");
                add_padded(&b, "⋮", width, 1);
            }
        }
        add_row(i);
    }
    luaL_pushresult(&b);
    return 1;
}

}  // namespace vela::lua
