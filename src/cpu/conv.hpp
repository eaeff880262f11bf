// The convolution and pooling kernels of the CPU device (src/cpu/conv.cpp, src/cpu/pooling.cpp);
// the math is in core/device.hpp and the layout in core/conv.hpp.
#pragma once
#include "core/conv.hpp"
#include "core/matrix.hpp"

namespace vela::cpu {

void im2col(const ConvGeom& g, const Matrix& x, const Matrix& cols);
void col2im(const ConvGeom& g, const Matrix& cols, const Matrix& x);
void maxpool(const ConvGeom& g, const Matrix& x, const Matrix& y, const Matrix& idx);
void maxpool_backward(const ConvGeom& g, const Matrix& dy, const Matrix& idx, const Matrix& dx);
void avgpool(const ConvGeom& g, const Matrix& x, const Matrix& y);
void avgpool_backward(const ConvGeom& g, const Matrix& dy, const Matrix& dx);
void to_images(const Matrix& u, const Matrix& b, const Matrix& y);
void from_images(const Matrix& y, const Matrix& u);

}  // namespace vela::cpu
