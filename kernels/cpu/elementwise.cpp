// CPU elementwise kernels over strided buffers, with the op list's signatures
// (hkt/kernels/op_list.hpp): the elementwise family (elementwise_defs.hpp),
// copies, fills and where. Outputs are contiguous unless their strides are
// given; inputs carry broadcast strides (0 on broadcast dims).
#include <cstdint>
#include <type_traits>

#include "hkt/core/shape.hpp"
#include "hkt/kernels/elementwise_defs.hpp"
#include "kernels/backends.hpp"
#include "kernels/cpu/gelu.hpp"
#include "kernels/cpu/loops.hpp"

namespace hkt::cpu {
using kernels::buf;
namespace {

// y = Op::f(x), y contiguous.
template <class Op, class T>
void unary(const void* xv, const Strides& xs, void* yv, const Shape& shape) {
  const T* x = buf<T>(xv);
  T* y = buf<T>(yv);
  const Strides ys = contiguous_strides(shape);
  if constexpr (std::is_same_v<Op, ew::GeluErf> && std::is_same_v<T, float>)
    if (xs == ys && gelu_erf_f32(x, y, numel_of(shape))) return;
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
void unary_grad(const void* xv, const void* yv, const void* gv, void* gxv, int64_t n) {
  const T *x = buf<T>(xv), *y = buf<T>(yv), *g = buf<T>(gv);
  T* gx = buf<T>(gxv);
  if constexpr (std::is_same_v<Op, ew::GeluErf> && std::is_same_v<T, float>)
    if (gelu_erf_grad_f32(x, g, gx, n)) return;
  parallel_for(0, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) gx[i] = g[i] * Op::df(x[i], y[i]);
  });
}

// out = Op::f(a, b), out contiguous; R is T for arithmetic and bool for comparisons.
template <class Op, class T, class R>
void binary(const void* av, const Strides& as, const void* bv, const Strides& bs, void* ov, const Shape& shape) {
  const T *a = buf<T>(av), *b = buf<T>(bv);
  R* o = buf<R>(ov);
  parallel_runs<3>(shape, {as, bs, contiguous_strides(shape)}, [&](auto off, int64_t n, auto st) {
    const T* ap = a + off[0];
    const T* bp = b + off[1];
    R* op = o + off[2];
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
void copy_cast(const S* src, const Strides& ss, D* dst, const Strides& ds, const Shape& shape) {
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

}  // namespace

// The op list's copy (src of any dtype into dst of dtype D), cat (same dtype), fill and where.
template <class D>
void copy(const void* src, DType sdt, const Strides& ss, void* dst, const Strides& ds, const Shape& shape) {
  dispatch_all(sdt, [&]<class S>() { copy_cast<S, D>(buf<S>(src), ss, buf<D>(dst), ds, shape); });
}
template <class T>
void cat(const void* src, const Strides& ss, void* dst, const Strides& ds, const Shape& shape) {
  copy_cast<T, T>(buf<T>(src), ss, buf<T>(dst), ds, shape);
}
template <class T>
void fill(void* dstv, const Strides& ds, const Shape& shape, double value) {
  T* dst = buf<T>(dstv);
  const T v = static_cast<T>(value);
  parallel_runs<1>(shape, {ds}, [&](auto off, int64_t n, auto st) {
    T* dp = dst + off[0];
    for (int64_t i = 0; i < n; ++i) dp[i * st[0]] = v;
  });
}
// out = cond ? a : b (cond is bool; all broadcast to shape; out contiguous).
template <class T>
void where(const void* cv, const Strides& cs, const void* av, const Strides& as, const void* bv, const Strides& bs,
           void* ov, const Shape& shape) {
  const bool* c = buf<bool>(cv);
  const T *a = buf<T>(av), *b = buf<T>(bv);
  T* o = buf<T>(ov);
  parallel_runs<4>(shape, {cs, as, bs, contiguous_strides(shape)}, [&](auto off, int64_t n, auto st) {
    for (int64_t i = 0; i < n; ++i)
      o[off[3] + i * st[3]] = c[off[0] + i * st[0]] ? a[off[1] + i * st[1]] : b[off[2] + i * st[2]];
  });
}

HKT_CPU_KERNEL(copy)
HKT_CPU_KERNEL(cat)
HKT_CPU_KERNEL(fill)
HKT_CPU_KERNEL(where)

// The elementwise family, from its lists (kernels/backends.hpp).
HKT_REGISTER_ELEMENTWISE(DeviceType::CPU)

}  // namespace hkt::cpu
