#version 450
// mv.comp's one invocation per row (MV_ROWS) with a, x and y read and written
// through the texel views of their memory blocks (Caps::texel_views,
// kernel.hpp's bindings): on lavapipe each of the row's loads by address is
// a loop over the lanes (~74 ns of processor time per 8 lanes), a texel
// fetch one gather (~10 ns). The same sums in the same order. The host runs
// it where mv.comp would run MV_ROWS and every operand's block has views
// (nn.fit's bias gradients: the column sums of delta).
#define MV_TEXEL 1
#include "mv.glsl"
