// bias_gelu CPU kernels: y = gelu(x + b) over contiguous x [rows, C], b [C],
// and dx = g * gelu'(x + b). Elementwise (no reduction), so the bits do not
// depend on the thread count; the functors are the CUDA kernel's
// (hkt/kernels/elementwise_defs.hpp).
#pragma once
#include <cstdint>

#include "hkt/kernels/elementwise_defs.hpp"
#include "kernels/cpu/parallel.hpp"

namespace hkt::cpu {

template <class T, class Gelu>
void bias_gelu_forward(const T* x, const T* b, T* y, int64_t rows, int64_t C) {
  parallel_for(0, rows * C, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) y[i] = Gelu::f(x[i] + b[i % C]);
  });
}

template <class T, class Gelu>
void bias_gelu_backward(const T* x, const T* b, const T* g, T* dx, int64_t rows, int64_t C) {
  parallel_for(0, rows * C, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const T u = x[i] + b[i % C];
      dx[i] = g[i] * Gelu::df(u, Gelu::f(u));
    }
  });
}

}  // namespace hkt::cpu
