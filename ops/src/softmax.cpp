// softmax / log_softmax: one fused kernel per direction (kernels/cpu/softmax.hpp).
#include "hkt/core/function.hpp"
#include "hkt/core/kernel_table.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/nn.hpp"
#include "kernels/cpu/softmax.hpp"
#if HKT_WITH_CUDA
#include "kernels/cuda/kernels.hpp"
#endif

namespace hkt {
namespace {

// x and y are contiguous [outer, D, inner]; the op runs along D.
using SoftmaxSig = void(const void* x, void* y, int64_t outer, int64_t D, int64_t inner);
using SoftmaxGradSig = void(const void* y, const void* g, void* dx, int64_t outer, int64_t D, int64_t inner);

template <class T, bool Log>
void cpu_softmax(const void* x, void* y, int64_t outer, int64_t D, int64_t inner) {
  cpu::softmax_forward<T, Log>(static_cast<const T*>(x), static_cast<T*>(y), outer, D, inner);
}
template <class T, bool Log>
void cpu_softmax_grad(const void* y, const void* g, void* dx, int64_t outer, int64_t D, int64_t inner) {
  cpu::softmax_backward<T, Log>(static_cast<const T*>(y), static_cast<const T*>(g), static_cast<T*>(dx), outer, D,
                                inner);
}

KernelTable<SoftmaxSig> softmax_kernels{"softmax"};
KernelTable<SoftmaxSig> log_softmax_kernels{"log_softmax"};
KernelTable<SoftmaxGradSig> softmax_grad_kernels{"softmax_backward"};
KernelTable<SoftmaxGradSig> log_softmax_grad_kernels{"log_softmax_backward"};

const bool kRegistered = [] {
  constexpr auto C = DeviceType::CPU;
  softmax_kernels.set(C, DType::Float32, &cpu_softmax<float, false>);
  softmax_kernels.set(C, DType::Float64, &cpu_softmax<double, false>);
  log_softmax_kernels.set(C, DType::Float32, &cpu_softmax<float, true>);
  log_softmax_kernels.set(C, DType::Float64, &cpu_softmax<double, true>);
  softmax_grad_kernels.set(C, DType::Float32, &cpu_softmax_grad<float, false>);
  softmax_grad_kernels.set(C, DType::Float64, &cpu_softmax_grad<double, false>);
  log_softmax_grad_kernels.set(C, DType::Float32, &cpu_softmax_grad<float, true>);
  log_softmax_grad_kernels.set(C, DType::Float64, &cpu_softmax_grad<double, true>);
#if HKT_WITH_CUDA
  constexpr auto G = DeviceType::CUDA;
  softmax_kernels.set(G, DType::Float32, &cuda::softmax_forward<float, false>);
  softmax_kernels.set(G, DType::Float64, &cuda::softmax_forward<double, false>);
  log_softmax_kernels.set(G, DType::Float32, &cuda::softmax_forward<float, true>);
  log_softmax_kernels.set(G, DType::Float64, &cuda::softmax_forward<double, true>);
  softmax_grad_kernels.set(G, DType::Float32, &cuda::softmax_backward<float, false>);
  softmax_grad_kernels.set(G, DType::Float64, &cuda::softmax_backward<double, false>);
  log_softmax_grad_kernels.set(G, DType::Float32, &cuda::softmax_backward<float, true>);
  log_softmax_grad_kernels.set(G, DType::Float64, &cuda::softmax_backward<double, true>);
#endif
  return true;
}();

struct RowGeometry {
  int64_t outer = 1, D = 1, inner = 1;
};

// A 0-dim tensor is treated as one row of one element.
RowGeometry geometry(const Shape& shape, int64_t dim, const char* op) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  const int64_t d = wrap_dim(dim, nd == 0 ? 1 : nd, op);
  RowGeometry g;
  if (nd == 0) return g;
  for (int64_t i = 0; i < d; ++i) g.outer *= shape[i];
  g.D = shape[d];
  for (int64_t i = d + 1; i < nd; ++i) g.inner *= shape[i];
  return g;
}

// Saves only the output y: both backward formulas are written in y.
class SoftmaxFn final : public Function {
 public:
  SoftmaxFn(int64_t dim, bool log) : dim_(dim), log_(log) {}
  const char* name() const override { return log_ ? "log_softmax" : "softmax"; }
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    HKT_CHECK(is_floating(in[0].dtype()), name(), ": expected a floating tensor, got ", in[0].dtype(),
              shape_str(in[0].shape()));
    geometry(in[0].shape(), dim_, name());  // validates dim
    return {in[0].meta()};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor x = contiguous(in[0]);
    geo_ = geometry(x.shape(), dim_, name());
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    (log_ ? log_softmax_kernels : softmax_kernels)
        .get(x.device(), x.dtype())(x.raw_data(), y.raw_data(), geo_.outer, geo_.D, geo_.inner);
    y_ = y;
    return {y};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override {
    const Tensor y = y_.get(name()), gc = contiguous(g[0]);
    Tensor dx = Tensor::empty(y.shape(), y.dtype(), y.device());
    (log_ ? log_softmax_grad_kernels : softmax_grad_kernels)
        .get(y.device(), y.dtype())(y.raw_data(), gc.raw_data(), dx.raw_data(), geo_.outer, geo_.D, geo_.inner);
    return {dx};
  }

 private:
  int64_t dim_;
  bool log_;
  RowGeometry geo_;
  SavedTensor y_;
};

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return apply_op<SoftmaxFn>({x}, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return apply_op<SoftmaxFn>({x}, dim, true); }

}  // namespace hkt
