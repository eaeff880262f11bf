// The convolution and pooling kernels in Lua: im2col, col2im, maxpool,
// avgpool and their backward steps, to_images / from_images. The geometry is
// a table {c =, h =, w =, k =, stride =, pad =} (core/conv.hpp), k, stride and
// pad each a number or {height, width}; the layers of lua/vela/conv.lua call these.
#include <cstring>

#include "core/ops.hpp"
#include "lua/bind.hpp"
#include "lua/check.hpp"
#include "lua/guarded.hpp"
#include "lua/observe.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

namespace {

// An integer field of the table at `arg`, or a pair {height, width}; `dflt_*` when absent (−1: required).
void pair_field(lua_State* L, int arg, const char* fn, const char* key, int64_t dh, int64_t dw, int64_t& h,
                int64_t& w) {
    int t = lua_getfield(L, arg, key);
    if (t == LUA_TNIL) {
        lua_pop(L, 1);
        if (dh < 0) luaL_error(L, "%s: the geometry has no '%s' (expected {c =, h =, w =, k =, stride =, pad =})", fn, key);
        h = dh, w = dw;
        return;
    }
    auto integer = [&](int idx, int64_t& out) {
        int isint = 0;
        lua_Integer v = lua_tointegerx(L, idx, &isint);
        if (!isint)
            luaL_error(L, "%s: geometry field '%s' must be an integer or {height, width} of integers, got %s", fn, key,
                       luaL_typename(L, idx));
        out = int64_t(v);
    };
    if (t == LUA_TTABLE) {
        if (luaL_len(L, -1) != 2) luaL_error(L, "%s: geometry field '%s' must be {height, width}, got a table of %d", fn, key, int(luaL_len(L, -1)));
        lua_geti(L, -1, 1);
        integer(-1, h);
        lua_geti(L, -2, 2);
        integer(-1, w);
        lua_pop(L, 3);
        return;
    }
    integer(-1, h);
    w = h;
    lua_pop(L, 1);
}

// The geometry table at `arg`. pooling: the stride defaults to the window.
ConvGeom check_geom(lua_State* L, int arg, const char* fn, bool pooling) {
    if (!lua_istable(L, arg))
        luaL_error(L, "%s: argument #%d must be the geometry {c =, h =, w =, k =, stride =, pad =}, got %s", fn, arg,
                   luaL_typename(L, arg));
    lua_pushnil(L);
    while (lua_next(L, arg)) {
        lua_pop(L, 1);
        const char* k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : nullptr;
        bool known = false;
        for (const char* name : {"c", "h", "w", "k", "stride", "pad"}) known = known || (k && std::strcmp(k, name) == 0);
        if (!known)
            luaL_error(L, "%s: the geometry has an unknown field %s (expected c, h, w, k, stride, pad)", fn,
                       k ? lua_pushfstring(L, "'%s'", k) : luaL_typename(L, -1));
    }
    ConvGeom g;
    int64_t unused;
    pair_field(L, arg, fn, "c", 1, 1, g.c, unused);
    pair_field(L, arg, fn, "h", -1, -1, g.h, unused);
    pair_field(L, arg, fn, "w", -1, -1, g.w, unused);
    pair_field(L, arg, fn, "k", -1, -1, g.kh, g.kw);
    pair_field(L, arg, fn, "stride", pooling ? g.kh : 1, pooling ? g.kw : 1, g.sh, g.sw);
    pair_field(L, arg, fn, "pad", 0, 0, g.ph, g.pw);
    return g;
}

int l_im2col(lua_State* L) {
    check_nargs(L, 3);
    auto [x, cols] = check_matrices<2>(L);
    ConvGeom g = check_geom(L, 3, "im2col", false);
    guarded(L, [&] { im2col(g, x, cols); });
    lua_pushvalue(L, 2);
    return 1;
}

int l_col2im(lua_State* L) {
    check_nargs(L, 3);
    auto [cols, x] = check_matrices<2>(L);
    ConvGeom g = check_geom(L, 3, "col2im", false);
    guarded(L, [&] { col2im(g, cols, x); });
    lua_pushvalue(L, 2);
    return 1;
}

int l_maxpool(lua_State* L) {
    check_nargs(L, 4);
    auto [x, y, idx] = check_matrices<3>(L);
    ConvGeom g = check_geom(L, 4, "maxpool", true);
    guarded(L, [&] { maxpool(g, x, y, idx); });
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 3);
    return 2;
}

int l_maxpool_backward(lua_State* L) {
    check_nargs(L, 4);
    auto [dy, idx, dx] = check_matrices<3>(L);
    ConvGeom g = check_geom(L, 4, "maxpool_backward", true);
    guarded(L, [&] { maxpool_backward(g, dy, idx, dx); });
    lua_pushvalue(L, 3);
    return 1;
}

int l_avgpool(lua_State* L) {
    check_nargs(L, 3);
    auto [x, y] = check_matrices<2>(L);
    ConvGeom g = check_geom(L, 3, "avgpool", true);
    guarded(L, [&] { avgpool(g, x, y); });
    lua_pushvalue(L, 2);
    return 1;
}

int l_avgpool_backward(lua_State* L) {
    check_nargs(L, 3);
    auto [dy, dx] = check_matrices<2>(L);
    ConvGeom g = check_geom(L, 3, "avgpool_backward", true);
    guarded(L, [&] { avgpool_backward(g, dy, dx); });
    lua_pushvalue(L, 2);
    return 1;
}

int l_to_images(lua_State* L) {
    check_nargs(L, 3);
    auto [u, y] = check_matrices<2>(L);
    Matrix* b = lua_isnoneornil(L, 3) ? nullptr : &check_matrix(L, 3);
    guarded(L, [&] { to_images(u, b ? *b : Matrix{}, y); });
    lua_pushvalue(L, 2);
    return 1;
}

// conv(x, w, b, y, g [, act]): y ← act(the convolution of x by w + b).
int l_conv(lua_State* L) {
    check_nargs(L, 6);
    Matrix& x = check_matrix(L, 1);
    Matrix& w = check_matrix(L, 2);
    Matrix* b = lua_isnil(L, 3) ? nullptr : &check_matrix(L, 3);
    Matrix& y = check_matrix(L, 4);
    ConvGeom g = check_geom(L, 5, "conv", false);
    Act act = check_act(L, 6);
    guarded(L, [&] { conv(g, x, w, b ? *b : Matrix{}, act, y); });
    lua_pushvalue(L, 4);
    return 1;
}

// conv_wgrad(x, dz, dw, db, g): dw, db ← the filter and bias gradients.
int l_conv_wgrad(lua_State* L) {
    check_nargs(L, 5);
    Matrix& x = check_matrix(L, 1);
    Matrix& dz = check_matrix(L, 2);
    Matrix& dw = check_matrix(L, 3);
    Matrix* db = lua_isnil(L, 4) ? nullptr : &check_matrix(L, 4);
    ConvGeom g = check_geom(L, 5, "conv_wgrad", false);
    guarded(L, [&] { conv_wgrad(g, x, dz, dw, db ? *db : Matrix{}); });
    lua_pushvalue(L, 3);
    return 1;
}

// conv_dgrad(dz, w, dx, g): dx ← the input gradient.
int l_conv_dgrad(lua_State* L) {
    check_nargs(L, 4);
    auto [dz, w, dx] = check_matrices<3>(L);
    ConvGeom g = check_geom(L, 4, "conv_dgrad", false);
    guarded(L, [&] { conv_dgrad(g, dz, w, dx); });
    lua_pushvalue(L, 3);
    return 1;
}

const luaL_Reg conv_kernels[] = {
    {"im2col", l_im2col},
    {"col2im", l_col2im},
    {"maxpool", l_maxpool},
    {"maxpool_backward", l_maxpool_backward},
    {"avgpool", l_avgpool},
    {"avgpool_backward", l_avgpool_backward},
    {"to_images", l_to_images},
    {"from_images", matrix_kernel<from_images, 2>},  // from_images(y, u) -> u
    {"conv", l_conv},
    {"conv_wgrad", l_conv_wgrad},
    {"conv_dgrad", l_conv_dgrad},
    {nullptr, nullptr}};

void document() {
    const char* geom =
        " g = {c =, h =, w =, k =, stride =, pad =}: c channels (default 1) of h×w images, a k×k window (k, stride "
        "and pad may be {height, width})";
    auto d = [&](const char* name, const char* sig, std::string text) { doc(name, sig, text.c_str()); };
    d("layout", "images: C·H·W rows × one column per sample",
      "A batch of n images of C channels of H×W pixels is a (C·H·W)×n matrix: pixel (c, y, x) of image j (1-based) "
      "is row (c−1)·H·W + (y−1)·W + x of column j: channel-major, then the image's rows, then its columns "
      "(PyTorch's NCHW with the samples as columns). MNIST's 784×n batches are 1×28×28 images. im2col, maxpool, "
      "avgpool and nn.conv2d take this layout; docs/lua-api.md draws it.");
    d("im2col", "im2col(x, cols, g) -> cols",
      std::string("Unfolds every window of a batch of images into a column: x is (c·h·w)×n (one image per column, "
                  "channel-major, see ?layout), cols (c·k·k)×(oh·ow·n); cols(r, (j−1)·oh·ow + p) is element r of the "
                  "window at output position p of image j (zeros where it overhangs the padding). ") +
          geom + ", stride default 1, pad default 0; oh = (h + 2·pad − k)/stride + 1. A convolution is then one mm. "
                 "e.g. im2col(x, cols, {c = 1, h = 28, w = 28, k = 5}). Torch7 SpatialConvolutionMM, torch.nn.functional.unfold.");
    d("col2im", "col2im(cols, x, g) -> x",
      std::string("The adjoint of im2col, accumulating: x ← x + the sum of every column of cols put back at its "
                  "window (fill x with 0 first for the plain fold). The backward step of a convolution's input. ") +
          geom + ". torch.nn.functional.fold.");
    d("maxpool", "maxpool(x, y, idx, g) -> y, idx",
      std::string("Max pooling: y (c·oh·ow)×n ← the largest value of each window (padding never wins), idx (same "
                  "shape) ← its 1-based row in x's column (the first maximum on ties). ") +
          geom + ", stride default k, pad at most k/2. e.g. maxpool(x, y, idx, {c = 6, h = 24, w = 24, k = 2}). "
                 "torch.nn.functional.max_pool2d(return_indices=True).");
    d("maxpool_backward", "maxpool_backward(dy, idx, dx, g) -> dx",
      std::string("dx ← 0, then each dy(o, j) added to the pixel idx(o, j) names (idx from maxpool; an index outside "
                  "its own window is ignored). ") + geom + ".");
    d("avgpool", "avgpool(x, y, g) -> y",
      std::string("Average pooling: y (c·oh·ow)×n ← the sum of each window / (k·k) (padding counts as zeros). ") + geom +
          ", stride default k. torch.nn.functional.avg_pool2d.");
    d("avgpool_backward", "avgpool_backward(dy, dx, g) -> dx",
      std::string("dx ← the sum, over the windows that hold each pixel, of dy / (k·k). ") + geom + ".");
    d("to_images", "to_images(u, y [, b]) -> y",
      "y(c·P + p, j) ← u((j−1)·P + p, c) + b(c): from u ((P·n)×C, one row per position of each sample, one column "
      "per channel: what mm(colsᵀ, Wᵀ) gives after im2col) to the image layout y ((C·P)×n); b an optional C-vector "
      "(a bias per channel). e.g. to_images(u, y, b) after mm(cols:t(), w:t(), u).");
    d("from_images", "from_images(y, u) -> u",
      "The inverse move of to_images (no bias): u((j−1)·P + p, c) ← y(c·P + p, j); y (C·P)×n, u (P·n)×C.");
    d("conv", "conv(x, w, b, y, g [, act]) -> y",
      std::string("A whole convolution without im2col's windows: y(o·P + p, j) ← act(Σ_r w(o, r)·window_r(p, j) + "
                  "b(o)), x (c·h·w)×n images (?layout), w out×(c·k·k) filters in im2col's row order, b an out-vector "
                  "or nil, y (out·oh·ow)×n, act an activation name (default identity). ") +
          geom + ". The same as im2col, mm(cols:t(), w:t(), u), to_images(u, y, b) and act; on the cpu direct "
                 "(AVX2 for stride 1 without padding: nn.conv2d takes it there for such a layer's forward, and "
                 "conv_wgrad for its dW), elsewhere those steps. "
                 "e.g. conv(x, w, b, y, {c = 1, h = 28, w = 28, k = 5}, \"relu\"). torch.nn.functional.conv2d.");
    d("conv_wgrad", "conv_wgrad(x, dz, dw, db, g) -> dw",
      std::string("The filter and bias gradients of conv: dw(o, r) ← Σ_j Σ_p dz(o·P + p, j)·window_r(p, j), "
                  "db(o) ← Σ_j Σ_p dz(o·P + p, j) (db nil for none); x (c·h·w)×n, dz (out·oh·ow)×n (the gradient "
                  "before the activation), dw out×(c·k·k), any view (its transpose too). ") +
          geom + ". e.g. conv_wgrad(x, dz, dw, db, {c = 1, h = 28, w = 28, k = 5}).");
    d("conv_dgrad", "conv_dgrad(dz, w, dx, g) -> dx",
      std::string("The input gradient of conv, overwritten: dx(pixel, j) ← Σ_o Σ_p w(o, r)·dz(o·P + p, j) over "
                  "the outputs p whose window holds the pixel (r its offset there; 0 where no window reaches); dz "
                  "(out·oh·ow)×n (the gradient before the activation), w out×(c·k·k) as conv's, dx (c·h·w)×n. The "
                  "same as from_images(dz, du), mm(w:t(), du:t(), cols), fill(dx, 0) and col2im(cols, dx, g), "
                  "without the windows; on the cpu direct (AVX2 for stride 1 without padding: nn.conv2d's backward "
                  "takes it there; scalar loops elsewhere), on Vulkan those steps. ") +
          geom + ". e.g. g = {c = 2, h = 6, w = 6, k = 3}; dx = conv_dgrad(ones(2 * 16, 4), ones(2, 18), zeros(72, 4), "
                 "g) (dx's corner pixels 2, the middle ones 18). torch.nn.grad.conv2d_input.");
}

}  // namespace

void open_conv(lua_State* L) {
    luaL_setfuncs(L, conv_kernels, 0);
    note_kernels(L, conv_kernels);  // profile, trace and diverge tell these kernels from other calls
    document();
}

}  // namespace vela::lua
