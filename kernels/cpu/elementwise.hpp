// CPU elementwise kernels over strided buffers. Outputs are written through
// their own strides; inputs carry broadcast strides (0 on broadcast dims).
#pragma once
#include <cstdint>
#include <type_traits>

#include "hkt/core/shape.hpp"
#include "kernels/cpu/gelu.hpp"
#include "kernels/cpu/loops.hpp"
#include "hkt/kernels/elementwise_defs.hpp"

namespace hkt::cpu {

// y = Op::f(x)
template <class Op, class T>
void unary(const T* x, const Strides& xs, T* y, const Strides& ys, const Shape& shape) {
  if constexpr (std::is_same_v<Op, ew::GeluErf> && std::is_same_v<T, float>)
    if (xs == contiguous_strides(shape) && ys == xs && gelu_erf_f32(x, y, numel_of(shape))) return;
  parallel_runs<2>(shape, {xs, ys}, [&](auto off, int64_t n, auto st) {
    const T* xp = x + off[0];
    T* yp = y + off[1];
    if (st[0] == 1 && st[1] == 1) {
      for (int64_t i = 0; i < n; ++i) yp[i] = Op::f(xp[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) yp[i * st[1]] = Op::f(xp[i * st[0]]);
    }
  });
}

// gx = g * Op::df(x, y); all contiguous of n elements.
template <class Op, class T>
void unary_grad(const T* x, const T* y, const T* g, T* gx, int64_t n) {
  if constexpr (std::is_same_v<Op, ew::GeluErf> && std::is_same_v<T, float>)
    if (gelu_erf_grad_f32(x, g, gx, n)) return;
  parallel_for(0, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) gx[i] = g[i] * Op::df(x[i], y[i]);
  });
}

// out = Op::f(a, b); R is T for arithmetic and bool for comparisons.
template <class Op, class T, class R>
void binary(const T* a, const Strides& as, const T* b, const Strides& bs, R* out, const Strides& os,
            const Shape& shape) {
  parallel_runs<3>(shape, {as, bs, os}, [&](auto off, int64_t n, auto st) {
    const T* ap = a + off[0];
    const T* bp = b + off[1];
    R* op = out + off[2];
    if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
      for (int64_t i = 0; i < n; ++i) op[i] = Op::f(ap[i], bp[i]);
    } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
      const T bv = *bp;
      for (int64_t i = 0; i < n; ++i) op[i] = Op::f(ap[i], bv);
    } else {
      for (int64_t i = 0; i < n; ++i) op[i * st[2]] = Op::f(ap[i * st[0]], bp[i * st[1]]);
    }
  });
}

// dst = (D) src, both strided (D and S may differ: a dtype cast).
template <class S, class D>
void copy(const S* src, const Strides& ss, D* dst, const Strides& ds, const Shape& shape) {
  parallel_runs<2>(shape, {ss, ds}, [&](auto off, int64_t n, auto st) {
    const S* sp = src + off[0];
    D* dp = dst + off[1];
    if (st[0] == 1 && st[1] == 1) {
      for (int64_t i = 0; i < n; ++i) dp[i] = static_cast<D>(sp[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) dp[i * st[1]] = static_cast<D>(sp[i * st[0]]);
    }
  });
}

template <class T>
void fill(T* dst, const Strides& ds, const Shape& shape, T v) {
  parallel_runs<1>(shape, {ds}, [&](auto off, int64_t n, auto st) {
    T* dp = dst + off[0];
    for (int64_t i = 0; i < n; ++i) dp[i * st[0]] = v;
  });
}

// out = cond ? a : b (cond is bool; all broadcast to shape; out contiguous).
template <class T>
void where(const bool* c, const Strides& cs, const T* a, const Strides& as, const T* b, const Strides& bs, T* out,
           const Shape& shape) {
  parallel_runs<4>(shape, {cs, as, bs, contiguous_strides(shape)}, [&](auto off, int64_t n, auto st) {
    for (int64_t i = 0; i < n; ++i)
      out[off[3] + i * st[3]] = c[off[0] + i * st[0]] ? a[off[1] + i * st[1]] : b[off[2] + i * st[2]];
  });
}

}  // namespace hkt::cpu
