// Basic layers. Shapes use B batch, T time, D features.
#pragma once
#include <memory>

#include "hkt/core/random.hpp"
#include "hkt/models/module.hpp"

namespace hkt::nn {

struct LayerOptions {
  DType dtype = DType::Float32;
  Generator* gen = nullptr;  // for the initial values; null = global generator
};

// y = x W^T + b; W [out, in], b [out]. x [..., in] -> [..., out].
// Init (PyTorch's default): W ~ U(-1/sqrt(in), 1/sqrt(in)), b likewise.
class Linear : public Layer {
 public:
  Linear(int64_t in, int64_t out, bool bias = true, LayerOptions opt = {});
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;  // bias undefined when disabled
  int64_t in_features, out_features;
};

// Layer norm over the last dim; weight = 1, bias = 0 at init.
class LayerNorm : public Layer {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-5, bool affine = true, LayerOptions opt = {});
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
  double eps;
};

// ids (Int64, any shape) -> [ids..., dim]; weight ~ N(0, 1) at init.
class Embedding : public Module {
 public:
  Embedding(int64_t num, int64_t dim, LayerOptions opt = {});
  Tensor forward(const Tensor& ids);
  Tensor operator()(const Tensor& ids) { return forward(ids); }
  Tensor weight;
};

// Inverted dropout, active only in training mode. Draws from `gen` (the
// global generator when null; the global one is what checkpoints restore).
// `gen` must outlive the layer.
class Dropout : public Layer {
 public:
  explicit Dropout(double p, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  double p;

 private:
  Generator* gen_;
};

// Linear(D, H) -> GELU -> Linear(H, D) -> Dropout(p). opt.gen only seeds the
// initial values; the dropout masks come from the global generator.
class FeedForward : public Layer {
 public:
  FeedForward(int64_t dim, int64_t hidden, double dropout = 0.0, bool approximate_gelu = false,
              LayerOptions opt = {});
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Linear> fc1, fc2;
  std::shared_ptr<Dropout> drop;
  bool approximate_gelu;
};

// Causal depthwise 1-D convolution over [B, T, C] (see hkt/ops/conv.hpp for
// the exact indexing): weight [C, k], bias [C]. Init: U(-1/sqrt(k), 1/sqrt(k)).
class CausalDepthwiseConv1d : public Layer {
 public:
  CausalDepthwiseConv1d(int64_t channels, int64_t kernel_size, int64_t stride = 1, bool bias = true,
                        LayerOptions opt = {});
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
  int64_t kernel_size, stride;
};

}  // namespace hkt::nn
