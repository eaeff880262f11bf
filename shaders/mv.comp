#version 450
#include "mv.glsl"
