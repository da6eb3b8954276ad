// The list of the library's kernel ops: one entry per kernel table, from which
// the tables (hkt/kernels/registry.hpp), the completeness check and the
// op-test harness (tests/op_harness) are generated. The elementwise family is
// listed by hkt/kernels/elementwise_defs.hpp (HKT_UNARY_OPS: a forward and a
// "_backward" table each, HKT_BINARY_OPS, HKT_COMPARE_OPS).
//
// X(id, "name", signature in hkt::sig, dtypes every CPU backend must have,
//   dtypes the CUDA backend must have where it is built)
//
// transfer and require_device are the device backends' (no CPU kernel):
// to_device's copies and its device check, under the device's slots.
// The name is the op's public name (the one its errors carry); "_backward" is
// the kernel of its gradient. The dtype sets are the least a backend must
// register (a backend may register more: supports() says what it has).
// Adding an op: one entry here, its kernel in kernels/cpu/ and kernels/cuda/
// registered in each backend's register file, and the op in ops/ (see
// docs/extending.md).
#pragma once
#include <cstdint>

#include "hkt/core/dtype.hpp"

namespace hkt::kernels {

// A set of dtypes, one bit per DType.
using DTypeSet = uint8_t;
constexpr DTypeSet dtype_bit(DType t) { return static_cast<DTypeSet>(1u << static_cast<unsigned>(t)); }
constexpr bool contains(DTypeSet s, DType t) { return (s & dtype_bit(t)) != 0; }
inline constexpr DTypeSet kF32 = dtype_bit(DType::Float32);
inline constexpr DTypeSet kFloat = kF32 | dtype_bit(DType::Float64);
inline constexpr DTypeSet kI64 = dtype_bit(DType::Int64);
inline constexpr DTypeSet kAll = kFloat | kI64 | dtype_bit(DType::Bool);
inline constexpr DTypeSet kNone = 0;

}  // namespace hkt::kernels

// clang-format off
#define HKT_KERNEL_OPS(X)                                                                       \
  X(copy,                  "copy",                                    Copy,          kAll,   kAll) \
  X(fill,                  "fill",                                    Fill,          kAll,   kAll) \
  X(transfer,              "to_device",                               Transfer,      kNone,  kAll) \
  X(require_device,        "device",                                  RequireDevice, kNone,  kF32) \
  X(cat,                   "cat",                                     CopySame,      kAll,   kAll) \
  X(index_check,           "index_check",                             IndexRange,    kI64,   kI64) \
  X(gather,                "gather",                                  Gather,        kAll,   kAll) \
  X(index_add,             "index_add",                               IndexAdd,      kFloat, kF32) \
  X(scatter_add,           "scatter_add",                             ScatterAdd,    kFloat, kF32) \
  X(where,                 "where",                                   Where,         kAll,   kAll) \
  X(matmul,                "matmul",                                  GemmBatched,   kFloat, kF32) \
  X(sgd,                   "sgd_update_",                             Sgd,           kFloat, kF32) \
  X(adamw,                 "adamw_update_",                           AdamW,         kFloat, kF32) \
  X(adamw_multi,           "adamw_update_multi_",                     AdamWMulti,    kFloat, kF32) \
  X(sum_squares,           "sum_of_squares",                          SumSquares,    kFloat, kF32) \
  X(scale,                 "scale_",                                  Scale,         kFloat, kF32) \
  X(sum_squares_multi,     "sum_of_squares_multi",                    SumSquaresMulti, kFloat, kF32) \
  X(scale_multi,           "scale_multi_",                            ScaleMulti,    kFloat, kF32) \
  X(uniform,               "uniform",                                 Random,        kFloat, kF32) \
  X(normal,                "normal",                                  Random,        kFloat, kF32) \
  X(sum,                   "sum",                                     Reduce,        kFloat, kF32) \
  X(max,                   "max",                                     Reduce,        kFloat, kF32) \
  X(softmax,               "softmax",                                 Softmax,       kFloat, kF32) \
  X(softmax_backward,      "softmax_backward",                        SoftmaxGrad,   kFloat, kF32) \
  X(log_softmax,           "log_softmax",                             Softmax,       kFloat, kF32) \
  X(log_softmax_backward,  "log_softmax_backward",                    SoftmaxGrad,   kFloat, kF32) \
  X(layer_norm,            "layer_norm",                              LayerNorm,     kFloat, kF32) \
  X(layer_norm_backward,   "layer_norm_backward",                     LayerNormGrad, kFloat, kF32) \
  X(gated_mix,             "gated_mix",                               GatedMix,      kFloat, kF32) \
  X(gated_mix_backward,    "gated_mix_backward",                      GatedMixGrad,  kFloat, kF32) \
  X(conv,                  "causal_depthwise_conv1d",                 Conv,          kFloat, kF32) \
  X(conv_backward,         "causal_depthwise_conv1d_backward",        ConvGrad,      kFloat, kF32) \
  X(ce_check,              "cross_entropy (target check)",            CeCheck,       kI64,   kI64) \
  X(cross_entropy,         "cross_entropy",                           Ce,            kFloat, kF32) \
  X(cross_entropy_backward,"cross_entropy_backward",                  CeGrad,        kFloat, kF32) \
  X(dropout,               "dropout",                                 DropoutMask,   kFloat, kF32) \
  X(bias_gelu,             "bias_gelu",                               BiasGelu,      kFloat, kF32) \
  X(bias_gelu_backward,    "bias_gelu_backward",                      BiasGeluGrad,  kFloat, kF32) \
  X(attention,             "hkt_attention",                           Attention,     kFloat, kF32) \
  X(attention_backward,    "hkt_attention_backward",                  AttentionGrad, kFloat, kF32) \
  X(local_attention,       "local_attention",                         LocalAttn,     kFloat, kNone) \
  X(local_attention_backward, "local_attention_backward",             LocalAttnGrad, kFloat, kNone) \
  HKT_KERNEL_OPS_HTRANSFORMER(X)
// H-Transformer-1D attention (hkt/ops/htransformer.hpp): CPU only.
#define HKT_KERNEL_OPS_HTRANSFORMER(X)                                                          \
  X(htransformer,          "htransformer_attention",                  HTransformer,  kFloat, kNone) \
  X(htransformer_backward, "htransformer_attention_backward",         HTransformerGrad, kFloat, kNone)
// clang-format on
// local_attention is CPU-only (kNone for CUDA): the op says so when called on a device.
