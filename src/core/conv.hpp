// The geometry of the convolution and pooling kernels (core/ops.hpp's im2col,
// col2im, maxpool, avgpool and their backward steps).
//
// Layout: a batch of images is a matrix with one column per sample and C·H·W
// rows, channel-major, then the image's rows, then its columns: pixel (c, y, x)
// of sample n (all 0-based) is element (c·H·W + y·W + x, n). A kernel window of
// kh×kw pixels moves by (sh, sw) over the image padded with (ph, pw) pixels of
// zeros on each side (pooling ignores the padding: max never picks it, average
// divides by kh·kw); its output positions are oh×ow, laid out the same way.
#pragma once
#include <cstdint>

namespace vela {

struct ConvGeom {
    int64_t c = 1, h = 1, w = 1;  // channels, image height and width
    int64_t kh = 1, kw = 1;       // window
    int64_t sh = 1, sw = 1;       // stride
    int64_t ph = 0, pw = 0;       // zero padding on each side
    int64_t oh() const { return (h + 2 * ph - kh) / sh + 1; }
    int64_t ow() const { return (w + 2 * pw - kw) / sw + 1; }
    int64_t pixels() const { return c * h * w; }           // rows of an input batch
    int64_t positions() const { return oh() * ow(); }      // output positions per channel
    int64_t patch() const { return c * kh * kw; }          // rows of im2col's output
};

}  // namespace vela
