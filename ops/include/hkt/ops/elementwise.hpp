// Elementwise ops with NumPy broadcasting. Both operands must have the same
// dtype and device (a double argument takes the tensor's dtype).
//
//   unary:   y = f(x)              backward: gx = g * f'(x)
//   binary:  y = f(a, b)           backward: ga, gb summed back to a's and b's shapes
#pragma once
#include "hkt/core/tensor.hpp"
#include "hkt/kernels/elementwise_defs.hpp"

namespace hkt {

#define HKT_DECLARE_UNARY(name, S, D) Tensor name(const Tensor& x);
HKT_UNARY_OPS(HKT_DECLARE_UNARY)
#undef HKT_DECLARE_UNARY

#define HKT_DECLARE_BINARY(name, S, D)            \
  Tensor name(const Tensor& a, const Tensor& b); \
  Tensor name(const Tensor& a, double b);        \
  Tensor name(double a, const Tensor& b);
HKT_BINARY_OPS(HKT_DECLARE_BINARY)
#undef HKT_DECLARE_BINARY

// Comparisons: Bool results, no gradient.
#define HKT_DECLARE_COMPARE(name, S, D)           \
  Tensor name(const Tensor& a, const Tensor& b); \
  Tensor name(const Tensor& a, double b);
HKT_COMPARE_OPS(HKT_DECLARE_COMPARE)
#undef HKT_DECLARE_COMPARE

// GELU; approximate = true selects the tanh form.
Tensor gelu(const Tensor& x, bool approximate = false);
Tensor square(const Tensor& x);
// y = min(max(x, lo), hi), one fused kernel (float32, float64, int64), with
// lo and hi in x's dtype (lo <= hi, else an error). The gradient is g where
// lo <= x <= hi and 0 elsewhere: it passes at the bounds themselves, as in
// PyTorch. A NaN x gives lo (y = min(max(NaN, lo), hi), max taking lo).
Tensor clamp(const Tensor& x, double lo, double hi);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, double b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, double b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, double b) { return div(a, b); }
inline Tensor operator+(double a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(double a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(double a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(double a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& x) { return neg(x); }

}  // namespace hkt
