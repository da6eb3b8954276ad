// Helpers every attention module shares (models/src only): input checks, the
// head split and merge, zeroing padded positions, the four D x D projections.
#pragma once
#include <cstdint>
#include <memory>

#include "hkt/models/attention.hpp"
#include "hkt/models/module.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/view.hpp"

namespace hkt::nn::detail {

inline void check_config(const AttentionConfig& c, const char* who) {
  HKT_CHECK(c.dim > 0 && c.heads > 0 && c.dim % c.heads == 0, who, ": dim (", c.dim,
            ") must be a positive multiple of heads (", c.heads, ")");
}

// Validates x [B, T, D] and valid (Bool [B, T] or undefined).
inline void check_inputs(const Tensor& x, const Tensor& valid, int64_t D, const char* who) {
  HKT_CHECK(x.defined() && x.dim() == 3 && x.size(2) == D, who, ": x must be [B, T, ", D, "], got ",
            x.defined() ? shape_str(x.shape()) : std::string("undefined"));
  HKT_CHECK(x.size(1) >= 1, who, ": the sequence is empty (T = 0)");
  if (valid.defined())
    HKT_CHECK(valid.dtype() == DType::Bool && (valid.shape() == Shape{x.size(0), x.size(1)}), who,
              ": valid must be Bool [", x.size(0), ", ", x.size(1), "], got ", valid.dtype(),
              shape_str(valid.shape()));
}

// [B, T, D] -> [B, H, T, dh]
inline Tensor split_heads(const Tensor& x, int64_t H) {
  return permute(reshape(x, {x.size(0), x.size(1), H, x.size(2) / H}), {0, 2, 1, 3});
}
// [B, H, T, dh] -> [B, T, D]
inline Tensor merge_heads(const Tensor& x) {
  return reshape(permute(x, {0, 2, 1, 3}), {x.size(0), x.size(2), x.size(1) * x.size(3)});
}

// Zeroes the positions where valid is false (x [B, T, D]).
inline Tensor zero_padded(const Tensor& x, const Tensor& valid) {
  return valid.defined() ? x * to_dtype(unsqueeze(valid, -1), x.dtype()) : x;
}

// Registers MHA's four projections wq, wk, wv, wo (D x D) on m, in that order, into w[0..3].
inline void projections(Module& m, const AttentionConfig& c, std::shared_ptr<Linear>* w) {
  check_config(c, m.type_name().c_str());
  const LayerOptions o{c.dtype, c.gen};
  const char* names[4] = {"wq", "wk", "wv", "wo"};
  for (int i = 0; i < 4; ++i) w[i] = m.register_module(names[i], std::make_shared<Linear>(c.dim, c.dim, c.bias, o));
}

}  // namespace hkt::nn::detail
