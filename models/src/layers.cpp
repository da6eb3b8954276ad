#include "hkt/models/layers.hpp"

#include <cmath>

#include "hkt/models/init.hpp"
#include "hkt/ops/conv.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/index.hpp"
#include "hkt/ops/linalg.hpp"
#include "hkt/ops/nn.hpp"
#include "hkt/ops/view.hpp"

namespace hkt::nn {

Linear::Linear(int64_t in, int64_t out, bool with_bias, LayerOptions opt)
    : Layer("Linear"), in_features(in), out_features(out) {
  HKT_CHECK(in > 0 && out > 0, "Linear: sizes must be positive, got in=", in, " out=", out);
  weight = register_parameter("weight", empty({out, in}, {opt.dtype}));
  init::kaiming_uniform_(weight, std::sqrt(5.0), opt.gen);
  if (with_bias) {
    bias = register_parameter("bias", empty({out}, {opt.dtype}));
    const double b = 1.0 / std::sqrt(static_cast<double>(in));
    init::uniform_(bias, -b, b, opt.gen);
  }
}

Tensor Linear::forward(const Tensor& x) {
  HKT_CHECK(x.dim() >= 1 && x.size(-1) == in_features, "Linear: input of shape ", shape_str(x.shape()),
            " does not end in in_features = ", in_features);
  Tensor y = matmul(x, transpose(weight, 0, 1));  // the transpose reaches BLAS as a flag
  return bias.defined() ? y + bias : y;
}

LayerNorm::LayerNorm(int64_t dim, double eps_, bool affine, LayerOptions opt) : Layer("LayerNorm"), eps(eps_) {
  HKT_CHECK(dim > 0, "LayerNorm: dim must be positive, got ", dim);
  if (affine) {
    weight = register_parameter("weight", ones({dim}, {opt.dtype}));
    bias = register_parameter("bias", zeros({dim}, {opt.dtype}));
  }
}

Tensor LayerNorm::forward(const Tensor& x) { return layer_norm(x, weight, bias, eps); }

Embedding::Embedding(int64_t num, int64_t dim, LayerOptions opt) : Module("Embedding") {
  HKT_CHECK(num > 0 && dim > 0, "Embedding: sizes must be positive, got num=", num, " dim=", dim);
  weight = register_parameter("weight", empty({num, dim}, {opt.dtype}));
  init::normal_(weight, 0.0, 1.0, opt.gen);
}

Tensor Embedding::forward(const Tensor& ids) { return embedding(weight, ids); }

Dropout::Dropout(double p_, Generator* gen) : Layer("Dropout"), p(p_), gen_(gen) {
  HKT_CHECK(p >= 0.0 && p < 1.0, "Dropout: p must be in [0, 1), got ", p);
}

Tensor Dropout::forward(const Tensor& x) { return dropout(x, p, is_training(), gen_); }

FeedForward::FeedForward(int64_t dim, int64_t hidden, double p, bool approx, LayerOptions opt)
    : Layer("FeedForward"), approximate_gelu(approx) {
  fc1 = register_module("fc1", std::make_shared<Linear>(dim, hidden, true, opt));
  fc2 = register_module("fc2", std::make_shared<Linear>(hidden, dim, true, opt));
  drop = register_module("drop", std::make_shared<Dropout>(p));
}

Tensor FeedForward::forward(const Tensor& x) { return drop->forward(fc2->forward(gelu(fc1->forward(x), approximate_gelu))); }

CausalDepthwiseConv1d::CausalDepthwiseConv1d(int64_t channels, int64_t k, int64_t s, bool with_bias,
                                             LayerOptions opt)
    : Layer("CausalDepthwiseConv1d"), kernel_size(k), stride(s) {
  HKT_CHECK(channels > 0 && k > 0 && s > 0, "CausalDepthwiseConv1d: channels, kernel_size and stride must be ",
            "positive, got ", channels, ", ", k, ", ", s);
  const double b = 1.0 / std::sqrt(static_cast<double>(k));
  weight = register_parameter("weight", empty({channels, k}, {opt.dtype}));
  init::uniform_(weight, -b, b, opt.gen);
  if (with_bias) {
    bias = register_parameter("bias", empty({channels}, {opt.dtype}));
    init::uniform_(bias, -b, b, opt.gen);
  }
}

Tensor CausalDepthwiseConv1d::forward(const Tensor& x) { return causal_depthwise_conv1d(x, weight, bias, stride); }

}  // namespace hkt::nn
