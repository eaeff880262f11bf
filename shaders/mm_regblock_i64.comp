#version 450
// mm_regblock.glsl with 64-bit byte addresses (GEMM_INT64), chosen by the host
// only on devices with shaderInt64; elsewhere mm_regblock.comp runs.
#define GEMM_INT64 1
#include "mm_regblock.glsl"
