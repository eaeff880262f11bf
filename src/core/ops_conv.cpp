// The checked convolution and pooling kernels (core/conv.hpp for the layout):
// the geometry, the shapes it implies, devices, dtypes and aliasing, checked
// once for every device; then one call into the operands' Device.
#include <string>

#include "core/error.hpp"
#include "core/ops.hpp"
#include "core/ops_check.hpp"

namespace vela {

using namespace opcheck;

namespace {

// Each window and image dimension at most 2^24: the shaders walk a window in
// loops of at most 4,096 iterations nested twice (drivers may end a loop after
// 65,535 iterations), and 2^24 keeps every index product inside 32 bits.
constexpr int64_t kMaxDim = int64_t(1) << 24;

void check_geom(const char* fn, const ConvGeom& g, bool pooling) {
    auto positive = [&](const char* what, int64_t v) {
        if (v < 1) fail("%s: %s is %lld (must be ≥ 1)", fn, what, (long long)v);
        if (v > kMaxDim) fail("%s: %s is %lld (at most %lld)", fn, what, (long long)v, (long long)kMaxDim);
    };
    positive("the channel count", g.c), positive("the image height", g.h), positive("the image width", g.w);
    positive("the window height", g.kh), positive("the window width", g.kw);
    positive("the vertical stride", g.sh), positive("the horizontal stride", g.sw);
    if (g.ph < 0 || g.pw < 0) fail("%s: padding is %lld×%lld (must be ≥ 0)", fn, (long long)g.ph, (long long)g.pw);
    if (g.ph > kMaxDim || g.pw > kMaxDim) fail("%s: padding is %lld×%lld (at most %lld)", fn, (long long)g.ph, (long long)g.pw, (long long)kMaxDim);
    if (g.kh > g.h + 2 * g.ph || g.kw > g.w + 2 * g.pw)
        fail("%s: the %lld×%lld window does not fit the %lld×%lld image padded by %lld×%lld", fn, (long long)g.kh,
             (long long)g.kw, (long long)g.h, (long long)g.w, (long long)g.ph, (long long)g.pw);
    if (pooling && (2 * g.ph > g.kh || 2 * g.pw > g.kw))
        fail("%s: padding %lld×%lld is more than half the %lld×%lld window (a window would see only padding)", fn,
             (long long)g.ph, (long long)g.pw, (long long)g.kh, (long long)g.kw);
    if (g.c * g.h > kMaxElements / g.w || g.patch() > kMaxElements || g.positions() * g.c > kMaxElements)
        fail("%s: a %lld×%lld×%lld image is too large", fn, (long long)g.c, (long long)g.h, (long long)g.w);
}

std::string image_str(const ConvGeom& g) {
    return format("%lld×%lld×%lld", (long long)g.c, (long long)g.h, (long long)g.w);
}

// x: C·H·W rows, any number of columns (samples).
void need_images(const char* fn, const char* arg, const Matrix& x, const ConvGeom& g) {
    if (x.rows != g.pixels())
        fail("%s: %s is %s but must have %lld rows, one %s image (C×H×W) per column", fn, arg, describe(x).c_str(),
             (long long)g.pixels(), image_str(g).c_str());
}

void need_outputs(const char* fn, const char* arg, const Matrix& y, const ConvGeom& g, int64_t n) {
    need_shape(fn, arg, y, g.c * g.positions(), n,
               format("C·oh·ow × samples: %lld channels of %lld×%lld outputs", (long long)g.c,
                      (long long)g.oh(), (long long)g.ow()).c_str());
}

void live_f32(const char* fn, const char* arg, const Matrix& m) {
    check_live(fn, arg, m);
    need_f32(fn, arg, m);
}

// conv's and conv_wgrad's filters (w or dw: out × C·kh·kw, one filter per row)
// and their outputs (y or dz: out·oh·ow × x's samples).
void need_filters(const char* fn, const char* wn, const Matrix& w, const char* yn, const Matrix& y, const Matrix& x,
                  const ConvGeom& g) {
    if (w.cols != g.patch())
        fail("%s: %s is %s but must have %lld columns (C·kh·kw = %lld·%lld·%lld), one filter per row", fn, wn,
             describe(w).c_str(), (long long)g.patch(), (long long)g.c, (long long)g.kh, (long long)g.kw);
    if (w.rows < 1 || w.rows > kMaxDim)
        fail("%s: %s is %s (1 to %lld filters)", fn, wn, describe(w).c_str(), (long long)kMaxDim);
    if (w.rows * g.positions() > kMaxElements)
        fail("%s: %lld channels of %lld positions is too large", fn, (long long)w.rows, (long long)g.positions());
    need_shape(fn, yn, y, w.rows * g.positions(), x.cols,
               format("out·oh·ow × samples: %lld channels of %lld×%lld outputs", (long long)w.rows, (long long)g.oh(),
                      (long long)g.ow()).c_str());
}

}  // namespace

void im2col(const ConvGeom& g, const Matrix& x, const Matrix& cols) {
    const char* fn = "im2col";
    live_f32(fn, "x", x), live_f32(fn, "cols", cols);
    same_device(fn, "x", x, "cols", cols);
    check_geom(fn, g, false);
    need_images(fn, "x", x, g);
    need_shape(fn, "cols", cols, g.patch(), g.positions() * x.cols,
               format("C·kh·kw × oh·ow·samples = %lld × %lld·%lld·%lld", (long long)g.patch(), (long long)g.oh(),
                      (long long)g.ow(), (long long)x.cols).c_str());
    no_overlap(fn, "cols", cols, "x", x);
    x.device().im2col(g, x, cols);
}

void col2im(const ConvGeom& g, const Matrix& cols, const Matrix& x) {
    const char* fn = "col2im";
    live_f32(fn, "cols", cols), live_f32(fn, "x", x);
    same_device(fn, "cols", cols, "x", x);
    check_geom(fn, g, false);
    need_images(fn, "x", x, g);
    need_shape(fn, "cols", cols, g.patch(), g.positions() * x.cols,
               format("C·kh·kw × oh·ow·samples = %lld × %lld·%lld·%lld", (long long)g.patch(), (long long)g.oh(),
                      (long long)g.ow(), (long long)x.cols).c_str());
    no_overlap(fn, "x", x, "cols", cols);
    x.device().col2im(g, cols, x);
}

void maxpool(const ConvGeom& g, const Matrix& x, const Matrix& y, const Matrix& idx) {
    const char* fn = "maxpool";
    live_f32(fn, "x", x), live_f32(fn, "y", y), live_f32(fn, "idx", idx);
    same_device(fn, "x", x, "y", y), same_device(fn, "x", x, "idx", idx);
    check_geom(fn, g, true);
    if (g.pixels() > kMaxDim)
        fail("maxpool: a %s image has %lld pixels; idx holds row numbers in float32, exact up to %lld", image_str(g).c_str(),
             (long long)g.pixels(), (long long)kMaxDim);
    need_images(fn, "x", x, g);
    need_outputs(fn, "y", y, g, x.cols);
    need_outputs(fn, "idx", idx, g, x.cols);
    no_overlap(fn, "y", y, "x", x), no_overlap(fn, "idx", idx, "x", x), no_overlap(fn, "idx", idx, "y", y);
    x.device().maxpool(g, x, y, idx);
}

void maxpool_backward(const ConvGeom& g, const Matrix& dy, const Matrix& idx, const Matrix& dx) {
    const char* fn = "maxpool_backward";
    live_f32(fn, "dy", dy), live_f32(fn, "idx", idx), live_f32(fn, "dx", dx);
    same_device(fn, "dy", dy, "idx", idx), same_device(fn, "dy", dy, "dx", dx);
    check_geom(fn, g, true);
    need_images(fn, "dx", dx, g);
    need_outputs(fn, "dy", dy, g, dx.cols);
    need_outputs(fn, "idx", idx, g, dx.cols);
    no_overlap(fn, "dx", dx, "dy", dy), no_overlap(fn, "dx", dx, "idx", idx);
    dx.device().maxpool_backward(g, dy, idx, dx);
}

void avgpool(const ConvGeom& g, const Matrix& x, const Matrix& y) {
    const char* fn = "avgpool";
    live_f32(fn, "x", x), live_f32(fn, "y", y);
    same_device(fn, "x", x, "y", y);
    check_geom(fn, g, true);
    need_images(fn, "x", x, g);
    need_outputs(fn, "y", y, g, x.cols);
    no_overlap(fn, "y", y, "x", x);
    x.device().avgpool(g, x, y);
}

void avgpool_backward(const ConvGeom& g, const Matrix& dy, const Matrix& dx) {
    const char* fn = "avgpool_backward";
    live_f32(fn, "dy", dy), live_f32(fn, "dx", dx);
    same_device(fn, "dy", dy, "dx", dx);
    check_geom(fn, g, true);
    need_images(fn, "dx", dx, g);
    need_outputs(fn, "dy", dy, g, dx.cols);
    no_overlap(fn, "dx", dx, "dy", dy);
    dx.device().avgpool_backward(g, dy, dx);
}

void to_images(const Matrix& u, const Matrix& b, const Matrix& y) {
    const char* fn = "to_images";
    const bool has_b = b.buf != nullptr;
    live_f32(fn, "u", u), live_f32(fn, "y", y);
    same_device(fn, "u", u, "y", y);
    if (has_b) live_f32(fn, "b", b), same_device(fn, "u", u, "b", b);
    if (u.cols == 0 || y.rows % u.cols != 0)
        fail("to_images: y is %s but u is %s (y's rows must be u's columns (channels) × positions)",
             describe(y).c_str(), describe(u).c_str());
    const int64_t positions = y.rows / u.cols;
    need_shape(fn, "u", u, positions * y.cols, u.cols, "positions·samples × channels, for y's shape");
    if (has_b) need_vector(fn, "b", b, u.cols, "one bias per channel (column of u)");
    no_overlap(fn, "y", y, "u", u);
    if (has_b) no_overlap(fn, "y", y, "b", b);
    u.device().to_images(u, b, y);
}

void from_images(const Matrix& y, const Matrix& u) {
    const char* fn = "from_images";
    live_f32(fn, "y", y), live_f32(fn, "u", u);
    same_device(fn, "y", y, "u", u);
    if (u.cols == 0 || y.rows % u.cols != 0)
        fail("from_images: y is %s but u is %s (y's rows must be u's columns (channels) × positions)",
             describe(y).c_str(), describe(u).c_str());
    const int64_t positions = y.rows / u.cols;
    need_shape(fn, "u", u, positions * y.cols, u.cols, "positions·samples × channels, for y's shape");
    no_overlap(fn, "u", u, "y", y);
    y.device().from_images(y, u);
}

// w: out × C·kh·kw, the filters in im2col's row order; the output channels are w's rows.
void conv VELA_SIG_conv {
    const char* fn = "conv";
    const bool has_b = b.buf != nullptr;
    live_f32(fn, "x", x), live_f32(fn, "w", w), live_f32(fn, "y", y);
    same_device(fn, "x", x, "w", w), same_device(fn, "x", x, "y", y);
    if (has_b) live_f32(fn, "b", b), same_device(fn, "x", x, "b", b);
    if (act >= Act::count_) fail("conv: unknown activation %d", int(act));
    check_geom(fn, g, false);
    need_images(fn, "x", x, g);
    need_filters(fn, "w", w, "y", y, x, g);
    if (has_b) need_vector(fn, "b", b, w.rows, "one bias per output channel (row of w)");
    no_overlap(fn, "y", y, "x", x), no_overlap(fn, "y", y, "w", w);
    if (has_b) no_overlap(fn, "y", y, "b", b);
    x.device().conv(g, x, w, b, act, y);
}

void conv_wgrad VELA_SIG_conv_wgrad {
    const char* fn = "conv_wgrad";
    const bool has_b = db.buf != nullptr;
    live_f32(fn, "x", x), live_f32(fn, "dz", dz), live_f32(fn, "dw", dw);
    same_device(fn, "x", x, "dz", dz), same_device(fn, "x", x, "dw", dw);
    if (has_b) live_f32(fn, "db", db), same_device(fn, "x", x, "db", db);
    check_geom(fn, g, false);
    need_images(fn, "x", x, g);
    need_filters(fn, "dw", dw, "dz", dz, x, g);
    if (has_b) need_vector(fn, "db", db, dw.rows, "one bias gradient per output channel (row of dw)");
    no_overlap(fn, "dw", dw, "x", x), no_overlap(fn, "dw", dw, "dz", dz);
    if (has_b) no_overlap(fn, "db", db, "x", x), no_overlap(fn, "db", db, "dz", dz), no_overlap(fn, "db", db, "dw", dw);
    x.device().conv_wgrad(g, x, dz, dw, db);
}

void conv_dgrad VELA_SIG_conv_dgrad {
    const char* fn = "conv_dgrad";
    live_f32(fn, "dz", dz), live_f32(fn, "w", w), live_f32(fn, "dx", dx);
    same_device(fn, "dz", dz, "w", w), same_device(fn, "dz", dz, "dx", dx);
    check_geom(fn, g, false);
    need_images(fn, "dx", dx, g);
    need_filters(fn, "w", w, "dz", dz, dx, g);
    no_overlap(fn, "dx", dx, "dz", dz), no_overlap(fn, "dx", dx, "w", w);
    dz.device().conv_dgrad(g, dz, w, dx);
}

}  // namespace vela
