// The one calling convention of the kernels of every backend: plain functions
// on device buffers passed as void* (the dtype is the table slot's), shapes
// and strides on the host, no Tensor and no autograd. Each op's forward and
// backward signature is here; hkt/kernels/op_list.hpp says which op uses which.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "hkt/core/dtype.hpp"
#include "hkt/core/shape.hpp"
#include "hkt/kernels/optim_defs.hpp"  // opt::MultiTensor, opt::AdamWTensor

namespace hkt::sig {

// --- elementwise (hkt/kernels/elementwise_defs.hpp): y contiguous ----------
using Unary = void(const void* x, const Strides& xs, void* y, const Shape& shape);
using UnaryGrad = void(const void* x, const void* y, const void* g, void* gx, int64_t n);  // all contiguous
using Binary = void(const void* a, const Strides& as, const void* b, const Strides& bs, void* out,
                    const Shape& shape);

// --- reductions over the dims flagged in red; out contiguous ---------------
using Reduce = void(const void* x, const Shape& shape, const Strides& strides, const std::vector<bool>& red,
                    void* out);

// --- softmax along D of contiguous [outer, D, inner] ------------------------
using Softmax = void(const void* x, void* y, int64_t outer, int64_t D, int64_t inner);
using SoftmaxGrad = void(const void* y, const void* g, void* dx, int64_t outer, int64_t D, int64_t inner);

// --- layer_norm: contiguous; w, b (forward) and dx, dw, db (backward) may be null ---
using LayerNorm = void(const void* x, const void* w, const void* b, void* y, void* mean, void* rstd, int64_t rows,
                       int64_t D, double eps);
using LayerNormGrad = void(const void* x, const void* g, const void* w, const void* mean, const void* rstd,
                           int64_t rows, int64_t D, void* dx, void* dw, void* db);

// --- gated_mix: y = w a + (1 - w) b, a, b [rows, C], w [C]; da, db, dw may be null ---
using GatedMix = void(const void* a, const void* b, const void* w, void* y, int64_t rows, int64_t C);
using GatedMixGrad = void(const void* a, const void* b, const void* w, const void* g, int64_t rows, int64_t C,
                          void* da, void* db, void* dw);

// --- causal depthwise conv1d: x [B, T, C], w [C, k]; bias, dx, dw, db may be null ---
using Conv = void(const void* x, const void* w, const void* bias, void* y, int64_t B, int64_t T, int64_t C,
                  int64_t k, int64_t s);
using ConvGrad = void(const void* x, const void* w, const void* g, int64_t B, int64_t T, int64_t C, int64_t k,
                      int64_t s, void* dx, void* dw, void* db);

// --- cross_entropy over contiguous [N, C] logits, int64 targets [N] ---------
// Target check (host outputs): first bad row (-1 if none), its value, and the
// number of non-ignored targets.
using CeCheck = void(const int64_t* t, int64_t N, int64_t C, int64_t ignore, int64_t* bad_row, int64_t* bad_value,
                     int64_t* count);
using Ce = void(const void* x, const int64_t* t, int64_t N, int64_t C, int64_t ignore, void* loss, void* lse);
using CeGrad = void(const void* x, const int64_t* t, int64_t N, int64_t C, int64_t ignore, const void* lse,
                    const void* g, int64_t g_stride, double scale, void* dx);

// --- copies, fills, transfers ----------------------------------------------
// dst (the slot's dtype, strided) = src (any dtype, strided, already broadcast), cast.
using Copy = void(const void* src, DType src_dtype, const Strides& ss, void* dst, const Strides& ds,
                  const Shape& shape);
using Fill = void(void* dst, const Strides& ds, const Shape& shape, double v);
// nbytes from a buffer on device `from` to one on device `to`, one of them the
// backend's (registered by the device backends, under every dtype).
using Transfer = void(void* dst, Device to, const void* src, Device from, size_t nbytes);
// Throws hkt::Error naming `what` unless device `index` of the backend exists.
using RequireDevice = void(int index, const char* what);

// --- indexing (ops/src/index.cpp) ------------------------------------------
using CopySame = void(const void* src, const Strides& ss, void* dst, const Strides& ds, const Shape& shape);
// Position of the first index outside [0, size) (-1 if none), its value in *bad.
using IndexRange = int64_t(const int64_t* idx, const Strides& is, const Shape& shape, int64_t size, int64_t* bad);
using Gather = void(const void* x, const Strides& xs, int64_t x_dim_stride, const int64_t* idx, const Strides& is,
                    void* out, const Shape& shape);
using IndexAdd = void(const void* g, const int64_t* idx, int64_t outer, int64_t n, int64_t inner, void* gx,
                      int64_t size);
using ScatterAdd = void(const void* g, const Strides& gs, int64_t g_dim, const int64_t* idx, const Strides& is,
                        int64_t i_dim, void* gx, const Strides& gxs, int64_t gx_dim, const Shape& cols, int64_t len);
using Where = void(const void* c, const Strides& cs, const void* a, const Strides& as, const void* b,
                   const Strides& bs, void* out, const Shape& shape);

// --- matmul: row-major C_i = op(A_i) @ op(B_i), C contiguous (m x n each) ---
// a_off, b_off: per-entry element offsets (host); lda, ldb: leading dims.
using GemmBatched = void(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                         const int64_t* a_off, const void* b, int64_t ldb, const int64_t* b_off, void* c,
                         int64_t batch);

// --- optimizer updates (in place; contiguous; hkt/kernels/optim_defs.hpp) ---
using Sgd = void(void* p, const void* g, void* buf, int64_t n, double lr, double momentum, double dampening,
                 double wd, bool nesterov, bool first_step);
using AdamW = void(void* p, const void* g, void* m, void* v, int64_t n, double beta1, double beta2, double eps,
                   double decay, double step_size, double bc2_sqrt);
using AdamWMulti = void(const std::vector<opt::AdamWTensor>& ts, double beta1, double beta2, double eps);
using SumSquares = double(const void* x, int64_t n);  // in double, shared_rules.hpp's chunks
using Scale = void(void* x, int64_t n, double factor);
using SumSquaresMulti = void(const std::vector<opt::MultiTensor>& ts, double* out);  // out: host
using ScaleMulti = void(const std::vector<opt::MultiTensor>& ts, double factor);

// --- random: n contiguous values, element i from Philox counter first + i ---
// (hkt/kernels/shared_rules.hpp)
using DropoutMask = void(void* out, int64_t n, uint64_t seed, uint64_t first, double p);
// uniform: (a, b) = (lo, hi); normal: (a, b) = (mean, std).
using Random = void(void* out, int64_t n, uint64_t seed, uint64_t first, double a, double b);

// --- bias_gelu: y = gelu(x + b), x [rows, C] contiguous, b [C] --------------
// Backward: dx = g * gelu'(x + b) (the bias gradient is dx summed over rows).
using BiasGelu = void(const void* x, const void* b, void* y, int64_t rows, int64_t C, bool approximate);
using BiasGeluGrad = void(const void* x, const void* b, const void* g, void* dx, int64_t rows, int64_t C,
                          bool approximate);

// --- hkt_attention: fused multi-scale attention (kernels/cpu/attention.hpp) ---
// A list-of-tensors input: q and k hold one buffer per level, level l
// [B, H, T_l, dh] with T_l = rules::attn_level_len(T, l); v, dout, o
// [B, H, T, dh]; lambda [H, L]; valid [B, T] or null (every key valid);
// lse [B, H, T]. Backward: dq, dk empty when not wanted, dv, dlambda null.
struct AttnShape {
  int64_t B, H, T, dh, L;
  bool causal;
  double scale;
};
using Attention = void(const AttnShape& s, const std::vector<const void*>& q, const std::vector<const void*>& k,
                       const void* v, const void* lambda, const bool* valid, void* o, void* lse);
using AttentionGrad = void(const AttnShape& s, const std::vector<const void*>& q,
                           const std::vector<const void*>& k, const void* v, const void* lambda, const bool* valid,
                           const void* o, const void* lse, const void* dout, const std::vector<void*>& dq,
                           const std::vector<void*>& dk, void* dv, void* dlambda);

// --- H-Transformer-1D attention (ops/src/htransformer.cpp) -----------------
// q, k, dq, dk contiguous [B, H, T, dh]; v, y, g, dv [B, H, T, dv]; valid Bool
// [B, T] or null; bias, dbias [H, 4 block - 1] or null; lse [B, H, T]. Tp (the
// padded length nr 2^L), nr (the block used, min(block, Tp / 2)) and L (the
// levels) come from htransformer_geometry. dq, dk, dv, dbias may be null.
struct HtrShape {
  int64_t B, H, T, dh, dv, block, Tp, nr, L;
  bool causal;
  double scale;
};
using HTransformer = void(const HtrShape& d, const void* q, const void* k, const void* v, const bool* valid,
                          const void* bias, void* y, void* lse);
using HTransformerGrad = void(const HtrShape& d, const void* q, const void* k, const void* v, const bool* valid,
                              const void* bias, const void* y, const void* lse, const void* g, void* dq, void* dk,
                              void* dv, void* dbias);

// --- local_attention: sliding-window attention of half-width w (causal: the w
// previous keys and itself); q, k, v, o [B, H, T, dh] and lse [B, H, T]
// contiguous, valid Bool [B, T] or null (kernels/cpu/local_attention.hpp) ---
using LocalAttn = void(const void* q, const void* k, const void* v, const bool* valid, void* o, void* lse, int64_t B,
                       int64_t H, int64_t T, int64_t dh, int64_t w, bool causal, double scale);
using LocalAttnGrad = void(const void* q, const void* k, const void* v, const bool* valid, const void* o,
                           const void* lse, const void* dout, int64_t B, int64_t H, int64_t T, int64_t dh, int64_t w,
                           bool causal, double scale, void* dq, void* dk, void* dv);

}  // namespace hkt::sig
