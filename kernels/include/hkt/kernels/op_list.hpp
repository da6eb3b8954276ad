// The list of the library's kernel ops and the one calling convention of their
// kernels: each op's signature (namespace hkt::sig), then one entry per kernel
// table (HKT_KERNEL_OPS). From the list come the tables (hkt/kernels/registry.hpp),
// both backends' registration (kernels/backends.hpp: each kernel file ends with
// HKT_CPU_KERNEL(id) or HKT_CUDA_KERNEL(id)), the completeness check, the
// op-test harness (tests/op_harness) and the op page (tools/ops_page.py). The
// elementwise family is listed by hkt/kernels/elementwise_defs.hpp
// (HKT_UNARY_OPS: a forward and a "_backward" table each, HKT_BINARY_OPS,
// HKT_COMPARE_OPS).
//
// X(id, "name", signature in hkt::sig, dtypes of the CPU backend,
//   dtypes of the CUDA backend where it is built)
//
// The kernels are plain functions on device buffers passed as void* (the dtype
// is the table slot's), shapes and strides on the host, no Tensor and no
// autograd; a backend's kernel of op `id` is `<backend>::id<T>` (or the
// function its HKT_*_KERNEL_AS names) for every T of the op's set there, and
// exactly those are registered. kNone: the backend has no kernel for the op
// (the op says so when called there). transfer and require_device are the
// device backends' (no CPU kernel): to_device's copies and its device check.
// The name is the op's public name (the one its errors carry); "_backward" is
// the kernel of its gradient. Adding an op: docs/extending.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "hkt/core/dtype.hpp"
#include "hkt/core/shape.hpp"
#include "hkt/kernels/optim_defs.hpp"  // opt::MultiTensor, opt::AdamWTensor

namespace hkt::kernels {

// A set of dtypes, one bit per DType.
using DTypeSet = uint8_t;
constexpr DTypeSet dtype_bit(DType t) { return static_cast<DTypeSet>(1u << static_cast<unsigned>(t)); }
constexpr bool contains(DTypeSet s, DType t) { return (s & dtype_bit(t)) != 0; }
inline constexpr DTypeSet kF32 = dtype_bit(DType::Float32);
inline constexpr DTypeSet kFloat = kF32 | dtype_bit(DType::Float64);
inline constexpr DTypeSet kI64 = dtype_bit(DType::Int64);
inline constexpr DTypeSet kNum = kFloat | kI64;
inline constexpr DTypeSet kAll = kNum | dtype_bit(DType::Bool);
inline constexpr DTypeSet kNone = 0;

}  // namespace hkt::kernels

namespace hkt::sig {

// --- elementwise (hkt/kernels/elementwise_defs.hpp): y contiguous ----------
using Unary = void(const void* x, const Strides& xs, void* y, const Shape& shape);
using UnaryGrad = void(const void* x, const void* y, const void* g, void* gx, int64_t n);  // all contiguous
using Binary = void(const void* a, const Strides& as, const void* b, const Strides& bs, void* out,
                    const Shape& shape);

// --- reductions over the dims flagged in red; out contiguous ---------------
using Reduce = void(const void* x, const Shape& shape, const Strides& strides, const std::vector<bool>& red,
                    void* out);

// --- clamp: y = min(max(x, lo), hi), bounds in x's dtype, y contiguous; backward:
// gx = g where lo <= x <= hi, else 0 (x, g, gx contiguous) --------------------
using Clamp = void(const void* x, const Strides& xs, void* y, const Shape& shape, double lo, double hi);
using ClampGrad = void(const void* x, const void* g, void* gx, int64_t n, double lo, double hi);

// --- argmax over the dims flagged in red: out (int64, contiguous) = the row-major
// position among the reduced elements of the first maximum (of the first NaN if any).
using Argmax = void(const void* x, const Shape& shape, const Strides& strides, const std::vector<bool>& red,
                    int64_t* out);

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

// --- hkt_attention: fused multi-scale attention (kernels/cpu/hkt_attention.cpp) ---
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
// contiguous, valid Bool [B, T] or null (kernels/cpu/local_attention.cpp) ---
using LocalAttn = void(const void* q, const void* k, const void* v, const bool* valid, void* o, void* lse, int64_t B,
                       int64_t H, int64_t T, int64_t dh, int64_t w, bool causal, double scale);
using LocalAttnGrad = void(const void* q, const void* k, const void* v, const bool* valid, const void* o,
                           const void* lse, const void* dout, int64_t B, int64_t H, int64_t T, int64_t dh, int64_t w,
                           bool causal, double scale, void* dq, void* dk, void* dv);

}  // namespace hkt::sig

// clang-format off
#define HKT_KERNEL_OPS(X)                                                                       \
  X(copy,                  "copy",                                    Copy,          kAll,   kAll) \
  X(fill,                  "fill",                                    Fill,          kAll,   kAll) \
  X(transfer,              "to_device",                               Transfer,      kNone,  kAll) \
  X(require_device,        "device",                                  RequireDevice, kNone,  kF32) \
  X(cat,                   "cat",                                     CopySame,      kAll,   kAll) \
  X(index_check,           "index_check",                             IndexRange,    kI64,   kI64) \
  X(gather,                "gather",                                  Gather,        kAll,   kAll) \
  X(index_add,             "index_add",                               IndexAdd,      kFloat, kFloat) \
  X(scatter_add,           "scatter_add",                             ScatterAdd,    kFloat, kFloat) \
  X(where,                 "where",                                   Where,         kAll,   kAll) \
  X(clamp,                 "clamp",                                   Clamp,         kNum,   kNum) \
  X(clamp_backward,        "clamp_backward",                          ClampGrad,     kFloat, kFloat) \
  X(matmul,                "matmul",                                  GemmBatched,   kFloat, kFloat) \
  X(sgd,                   "sgd_update_",                             Sgd,           kFloat, kFloat) \
  X(adamw,                 "adamw_update_",                           AdamW,         kFloat, kFloat) \
  X(adamw_multi,           "adamw_update_multi_",                     AdamWMulti,    kFloat, kFloat) \
  X(sum_squares,           "sum_of_squares",                          SumSquares,    kFloat, kFloat) \
  X(scale,                 "scale_",                                  Scale,         kFloat, kFloat) \
  X(sum_squares_multi,     "sum_of_squares_multi",                    SumSquaresMulti, kFloat, kFloat) \
  X(scale_multi,           "scale_multi_",                            ScaleMulti,    kFloat, kFloat) \
  X(uniform,               "uniform",                                 Random,        kFloat, kFloat) \
  X(normal,                "normal",                                  Random,        kFloat, kFloat) \
  X(sum,                   "sum",                                     Reduce,        kNum,   kNum) \
  X(max,                   "max",                                     Reduce,        kNum,   kNum) \
  X(argmax,                "argmax",                                  Argmax,        kNum,   kNum) \
  X(softmax,               "softmax",                                 Softmax,       kFloat, kFloat) \
  X(softmax_backward,      "softmax_backward",                        SoftmaxGrad,   kFloat, kFloat) \
  X(log_softmax,           "log_softmax",                             Softmax,       kFloat, kFloat) \
  X(log_softmax_backward,  "log_softmax_backward",                    SoftmaxGrad,   kFloat, kFloat) \
  X(layer_norm,            "layer_norm",                              LayerNorm,     kFloat, kFloat) \
  X(layer_norm_backward,   "layer_norm_backward",                     LayerNormGrad, kFloat, kFloat) \
  X(gated_mix,             "gated_mix",                               GatedMix,      kFloat, kFloat) \
  X(gated_mix_backward,    "gated_mix_backward",                      GatedMixGrad,  kFloat, kFloat) \
  X(conv,                  "causal_depthwise_conv1d",                 Conv,          kFloat, kFloat) \
  X(conv_backward,         "causal_depthwise_conv1d_backward",        ConvGrad,      kFloat, kFloat) \
  X(ce_check,              "cross_entropy (target check)",            CeCheck,       kI64,   kI64) \
  X(cross_entropy,         "cross_entropy",                           Ce,            kFloat, kFloat) \
  X(cross_entropy_backward,"cross_entropy_backward",                  CeGrad,        kFloat, kFloat) \
  X(dropout,               "dropout",                                 DropoutMask,   kFloat, kFloat) \
  X(bias_gelu,             "bias_gelu",                               BiasGelu,      kFloat, kFloat) \
  X(bias_gelu_backward,    "bias_gelu_backward",                      BiasGeluGrad,  kFloat, kFloat) \
  X(attention,             "hkt_attention",                           Attention,     kFloat, kFloat) \
  X(attention_backward,    "hkt_attention_backward",                  AttentionGrad, kFloat, kFloat) \
  X(local_attention,       "local_attention",                         LocalAttn,     kFloat, kNone) \
  X(local_attention_backward, "local_attention_backward",             LocalAttnGrad, kFloat, kNone) \
  HKT_KERNEL_OPS_HTRANSFORMER(X)
// H-Transformer-1D attention (hkt/ops/htransformer.hpp): CPU only.
#define HKT_KERNEL_OPS_HTRANSFORMER(X)                                                          \
  X(htransformer,          "htransformer_attention",                  HTransformer,  kFloat, kNone) \
  X(htransformer_backward, "htransformer_attention_backward",         HTransformerGrad, kFloat, kNone)
// clang-format on
