// float32 GELU (erf form) fast paths for contiguous buffers (gelu.cpp).
// Each returns false, doing nothing, when the CPU lacks AVX2 + FMA; the
// caller then runs the portable loop.
#pragma once
#include <cstdint>

namespace hkt::cpu {

bool gelu_erf_f32(const float* x, float* y, int64_t n);
bool gelu_erf_grad_f32(const float* x, const float* g, float* gx, int64_t n);

}  // namespace hkt::cpu
