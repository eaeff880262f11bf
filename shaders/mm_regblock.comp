#version 450
// The portable register-blocked mm (no 64-bit integers); the body is
// mm_regblock.glsl, which documents it. mm_regblock_i64.comp is the same
// kernel with 64-bit addresses, for devices that offer shaderInt64.
#include "mm_regblock.glsl"
