// dropout: a Philox keep-mask (kernels/cpu/random.hpp), saved for backward.
#include "hkt/core/function.hpp"
#include "hkt/core/kernel_table.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/nn.hpp"
#include "kernels/cpu/random.hpp"
#if HKT_WITH_CUDA
#include "kernels/cuda/kernels.hpp"
#endif

namespace hkt {
namespace {

// out: n contiguous mask values, 0 or 1 / (1 - p); element i uses counter first + i.
using MaskSig = void(void* out, int64_t n, uint64_t seed, uint64_t first, double p);

template <class T>
void cpu_dropout_mask(void* out, int64_t n, uint64_t seed, uint64_t first, double p) {
  cpu::dropout_mask<T>(static_cast<T*>(out), n, seed, first, p);
}

KernelTable<MaskSig> dropout_kernels{"dropout"};

const bool kRegistered = [] {
  dropout_kernels.set(DeviceType::CPU, DType::Float32, &cpu_dropout_mask<float>);
  dropout_kernels.set(DeviceType::CPU, DType::Float64, &cpu_dropout_mask<double>);
#if HKT_WITH_CUDA
  dropout_kernels.set(DeviceType::CUDA, DType::Float32, &cuda::dropout_mask<float>);
  dropout_kernels.set(DeviceType::CUDA, DType::Float64, &cuda::dropout_mask<double>);
#endif
  return true;
}();

// y = x * mask, with the mask (already scaled by 1 / (1 - p)) saved for backward.
// The mask is laid out in x's logical row-major order, so it does not depend
// on x's strides.
class DropoutFn final : public Function {
 public:
  DropoutFn(double p, Generator* gen) : p_(p), gen_(gen) {}
  const char* name() const override { return "dropout"; }
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    HKT_CHECK(is_floating(in[0].dtype()), "dropout: expected a floating tensor, got ", in[0].dtype(),
              shape_str(in[0].shape()));
    return {in[0].meta()};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor& x = in[0];
    Generator& g = gen_ ? *gen_ : default_generator();
    Tensor mask = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    const auto kernel = dropout_kernels.get(x.device(), x.dtype());
    const uint64_t first = g.reserve(static_cast<uint64_t>(mask.numel()));
    kernel(mask.raw_data(), mask.numel(), g.seed(), first, p_);
    mask_ = mask;
    return {mul(x, mask)};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override { return {g[0] * mask_.get(name())}; }

 private:
  double p_;
  Generator* gen_;
  SavedTensor mask_;
};

}  // namespace

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  HKT_CHECK(p >= 0.0 && p < 1.0, "dropout: p must be in [0, 1), got ", p);
  if (!training || p == 0.0) return x;
  return apply_op<DropoutFn>({x}, p, gen);
}

}  // namespace hkt
