// Declarations of the CUDA kernels' host entry points (kernels/cuda/*.cu),
// with the same void* signatures as the CPU kernels of the KernelTables in
// ops/src/, which register them when the library is built with HKT_CUDA.
// Plain C++: no CUDA header needed. All pointers are device pointers; every
// launch goes to the backend's stream (common.cuh).
#pragma once
#include <cstdint>
#include <vector>

#include "hkt/core/dtype.hpp"
#include "hkt/core/shape.hpp"

namespace hkt::cuda {

// --- elementwise.cu (outputs contiguous unless strides are given) ---------
template <class Op, class T>
void unary(const void* x, const Strides& xs, void* y, const Shape& shape);
template <class Op, class T>
void unary_grad(const void* x, const void* y, const void* g, void* gx, int64_t n);
template <class Op, class T, class R>
void binary(const void* a, const Strides& as, const void* b, const Strides& bs, void* out, const Shape& shape);
// dst (dtype D, strided) = src (any dtype, strided), cast.
template <class D>
void copy_cast(const void* src, DType src_dtype, const Strides& ss, void* dst, const Strides& ds, const Shape& shape);
template <class T>
void copy_same(const void* src, const Strides& ss, void* dst, const Strides& ds, const Shape& shape);
template <class T>
void fill(void* dst, const Strides& ds, const Shape& shape, double v);
template <class T>
void where(const void* c, const Strides& cs, const void* a, const Strides& as, const void* b, const Strides& bs,
           void* out, const Shape& shape);

// --- random.cu: Philox counters exactly as on the CPU (same bits) ---------
template <class T>
void rand_uniform(void* out, int64_t n, uint64_t seed, uint64_t first, double lo, double hi);
template <class T>
void rand_normal(void* out, int64_t n, uint64_t seed, uint64_t first, double mean, double std);
template <class T>
void dropout_mask(void* out, int64_t n, uint64_t seed, uint64_t first, double p);

// --- reduce.cu ------------------------------------------------------------
template <class T>
void reduce_sum(const void* x, const Shape& shape, const Strides& strides, const std::vector<bool>& red, void* out);
template <class T>
void reduce_max(const void* x, const Shape& shape, const Strides& strides, const std::vector<bool>& red, void* out);

// --- gemm.cu (cuBLAS) -----------------------------------------------------
// Row-major C_i = op(A_i) @ op(B_i) (C contiguous, m x n each), offsets on the host.
template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                  const int64_t* a_off, const void* b, int64_t ldb, const int64_t* b_off, void* c, int64_t batch);

// --- softmax.cu -----------------------------------------------------------
template <class T, bool Log>
void softmax_forward(const void* x, void* y, int64_t outer, int64_t D, int64_t inner);
template <class T, bool Log>
void softmax_backward(const void* y, const void* g, void* dx, int64_t outer, int64_t D, int64_t inner);

// --- layer_norm.cu --------------------------------------------------------
template <class T>
void layer_norm_forward(const void* x, const void* w, const void* b, void* y, void* mean, void* rstd, int64_t rows,
                        int64_t D, double eps);
template <class T>
void layer_norm_backward(const void* x, const void* g, const void* w, const void* mean, const void* rstd,
                         int64_t rows, int64_t D, void* dx, void* dw, void* db);

}  // namespace hkt::cuda
