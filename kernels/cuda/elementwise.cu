// Elementwise CUDA kernels over strided buffers: the functors of
// hkt/kernels/elementwise_defs.hpp (the same ones the CPU kernels use), a
// dense fast path, and StridedIndex for broadcast and non-contiguous operands.
#include "hkt/kernels/elementwise_defs.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/backends.hpp"

namespace hkt::cuda {
namespace {

template <class Op, class T>
__global__ void unary_dense(const T* x, T* y, int64_t n) {
  HKT_CUDA_LOOP(i, n) y[i] = Op::f(x[i]);
}
template <class Op, class T>
__global__ void unary_strided(const T* x, T* y, int64_t n, StridedIndex<2> ix) {
  HKT_CUDA_LOOP(i, n) {
    int64_t off[2];
    ix.offsets(i, off);
    y[off[1]] = Op::f(x[off[0]]);
  }
}
template <class Op, class T>
__global__ void unary_grad_kernel(const T* x, const T* y, const T* g, T* gx, int64_t n) {
  HKT_CUDA_LOOP(i, n) gx[i] = g[i] * Op::df(x[i], y[i]);
}
template <class Op, class T, class R>
__global__ void binary_dense(const T* a, const T* b, R* out, int64_t n) {
  HKT_CUDA_LOOP(i, n) out[i] = Op::f(a[i], b[i]);
}
template <class Op, class T, class R>
__global__ void binary_strided(const T* a, const T* b, R* out, int64_t n, StridedIndex<3> ix) {
  HKT_CUDA_LOOP(i, n) {
    int64_t off[3];
    ix.offsets(i, off);
    out[off[2]] = Op::f(a[off[0]], b[off[1]]);
  }
}
template <class S, class D>
__global__ void copy_strided(const S* src, D* dst, int64_t n, StridedIndex<2> ix) {
  HKT_CUDA_LOOP(i, n) {
    int64_t off[2];
    ix.offsets(i, off);
    dst[off[1]] = static_cast<D>(src[off[0]]);
  }
}
template <class T>
__global__ void fill_strided(T* dst, int64_t n, StridedIndex<1> ix, T v) {
  HKT_CUDA_LOOP(i, n) {
    int64_t off[1];
    ix.offsets(i, off);
    dst[off[0]] = v;
  }
}
template <class T>
__global__ void where_strided(const bool* c, const T* a, const T* b, T* out, int64_t n, StridedIndex<4> ix) {
  HKT_CUDA_LOOP(i, n) {
    int64_t off[4];
    ix.offsets(i, off);
    out[off[3]] = c[off[0]] ? a[off[1]] : b[off[2]];
  }
}

}  // namespace

template <class Op, class T>
void unary(const void* x, const Strides& xs, void* y, const Shape& shape) {
  const int64_t n = numel_of(shape);
  if (n == 0) return;
  const Strides ys = contiguous_strides(shape);
  const Strides* st[2] = {&xs, &ys};
  const auto ix = make_index<2>(shape, st, "unary");
  if (is_dense(ix))
    HKT_LAUNCH(blocks_for(n), kThreads, 0, unary_dense<Op, T>)(static_cast<const T*>(x), static_cast<T*>(y), n);
  else
    HKT_LAUNCH(blocks_for(n), kThreads, 0, unary_strided<Op, T>)(static_cast<const T*>(x), static_cast<T*>(y), n, ix);
  CUDA_CHECK_LAUNCH();
}

template <class Op, class T>
void unary_grad(const void* x, const void* y, const void* g, void* gx, int64_t n) {
  if (n == 0) return;
  HKT_LAUNCH(blocks_for(n), kThreads, 0, unary_grad_kernel<Op, T>)(
      static_cast<const T*>(x), static_cast<const T*>(y), static_cast<const T*>(g), static_cast<T*>(gx), n);
  CUDA_CHECK_LAUNCH();
}

template <class Op, class T, class R>
void binary(const void* a, const Strides& as, const void* b, const Strides& bs, void* out, const Shape& shape) {
  const int64_t n = numel_of(shape);
  if (n == 0) return;
  const Strides os = contiguous_strides(shape);
  const Strides* st[3] = {&as, &bs, &os};
  const auto ix = make_index<3>(shape, st, "binary");
  const T* ap = static_cast<const T*>(a);
  const T* bp = static_cast<const T*>(b);
  if (is_dense(ix))
    HKT_LAUNCH(blocks_for(n), kThreads, 0, binary_dense<Op, T, R>)(ap, bp, static_cast<R*>(out), n);
  else
    HKT_LAUNCH(blocks_for(n), kThreads, 0, binary_strided<Op, T, R>)(ap, bp, static_cast<R*>(out), n, ix);
  CUDA_CHECK_LAUNCH();
}

template <class D>
void copy_cast(const void* src, DType sdt, const Strides& ss, void* dst, const Strides& ds, const Shape& shape) {
  const int64_t n = numel_of(shape);
  if (n == 0) return;
  const Strides* st[2] = {&ss, &ds};
  const auto ix = make_index<2>(shape, st, "copy");
  dispatch_all(sdt, [&]<class S>() {
    HKT_LAUNCH(blocks_for(n), kThreads, 0, copy_strided<S, D>)(static_cast<const S*>(src), static_cast<D*>(dst), n, ix);
  });
  CUDA_CHECK_LAUNCH();
}

template <class T>
void copy_same(const void* src, const Strides& ss, void* dst, const Strides& ds, const Shape& shape) {
  copy_cast<T>(src, dtype_of<T>::value, ss, dst, ds, shape);
}

template <class T>
void fill(void* dst, const Strides& ds, const Shape& shape, double v) {
  const int64_t n = numel_of(shape);
  if (n == 0) return;
  const Strides* st[1] = {&ds};
  const auto ix = make_index<1>(shape, st, "fill");
  HKT_LAUNCH(blocks_for(n), kThreads, 0, fill_strided<T>)(static_cast<T*>(dst), n, ix, static_cast<T>(v));
  CUDA_CHECK_LAUNCH();
}

template <class T>
void where(const void* c, const Strides& cs, const void* a, const Strides& as, const void* b, const Strides& bs,
           void* out, const Shape& shape) {
  const int64_t n = numel_of(shape);
  if (n == 0) return;
  const Strides os = contiguous_strides(shape);
  const Strides* st[4] = {&cs, &as, &bs, &os};
  const auto ix = make_index<4>(shape, st, "where");
  HKT_LAUNCH(blocks_for(n), kThreads, 0, where_strided<T>)(static_cast<const bool*>(c), static_cast<const T*>(a),
                                                             static_cast<const T*>(b), static_cast<T*>(out), n, ix);
  CUDA_CHECK_LAUNCH();
}

// The elementwise family, from its lists (kernels/backends.hpp).
HKT_REGISTER_ELEMENTWISE(DeviceType::CUDA)

// The op list's kernels, registered for its CUDA dtypes (kernels/backends.hpp).
HKT_CUDA_KERNEL_AS(copy, copy_cast<T>)
HKT_CUDA_KERNEL_AS(cat, copy_same<T>)
HKT_CUDA_KERNEL(fill)
HKT_CUDA_KERNEL(where)

}  // namespace hkt::cuda
