// gated_mix: one op with its own forward and backward kernels
// (kernels/cpu/gated_mix.hpp, kernels/cuda/gated_mix.cu).
#include "hkt/core/function.hpp"
#include "hkt/core/kernel_table.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/nn.hpp"
#include "kernels/cpu/gated_mix.hpp"
#if HKT_WITH_CUDA
#include "kernels/cuda/kernels_nn.hpp"
#endif

namespace hkt {
namespace {

// All buffers contiguous; da, db, dw (backward) may be null.
using MixSig = void(const void* a, const void* b, const void* w, void* y, int64_t rows, int64_t C);
using MixGradSig = void(const void* a, const void* b, const void* w, const void* g, int64_t rows, int64_t C, void* da,
                        void* db, void* dw);

template <class T>
void cpu_mix(const void* a, const void* b, const void* w, void* y, int64_t rows, int64_t C) {
  cpu::gated_mix_forward<T>(static_cast<const T*>(a), static_cast<const T*>(b), static_cast<const T*>(w),
                            static_cast<T*>(y), rows, C);
}
template <class T>
void cpu_mix_grad(const void* a, const void* b, const void* w, const void* g, int64_t rows, int64_t C, void* da,
                  void* db, void* dw) {
  cpu::gated_mix_backward<T>(static_cast<const T*>(a), static_cast<const T*>(b), static_cast<const T*>(w),
                             static_cast<const T*>(g), rows, C, static_cast<T*>(da), static_cast<T*>(db),
                             static_cast<T*>(dw));
}

KernelTable<MixSig> mix_kernels{"gated_mix"};
KernelTable<MixGradSig> mix_grad_kernels{"gated_mix_backward"};

const bool kRegistered = [] {
  constexpr auto C = DeviceType::CPU;
  mix_kernels.set(C, DType::Float32, &cpu_mix<float>);
  mix_kernels.set(C, DType::Float64, &cpu_mix<double>);
  mix_grad_kernels.set(C, DType::Float32, &cpu_mix_grad<float>);
  mix_grad_kernels.set(C, DType::Float64, &cpu_mix_grad<double>);
#if HKT_WITH_CUDA
  constexpr auto G = DeviceType::CUDA;
  mix_kernels.set(G, DType::Float32, &cuda::gated_mix_forward<float>);
  mix_kernels.set(G, DType::Float64, &cuda::gated_mix_forward<double>);
  mix_grad_kernels.set(G, DType::Float32, &cuda::gated_mix_backward<float>);
  mix_grad_kernels.set(G, DType::Float64, &cuda::gated_mix_backward<double>);
#endif
  return true;
}();

void* data_or_null(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }

// Inputs: a, b [..., C] (same shape), w [C]. Saves a, b and w (a, b are read only for dw).
class GatedMixFn final : public Function {
 public:
  const char* name() const override { return "gated_mix"; }
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    const char* op = name();
    const char* which[] = {"a", "b", "w"};
    for (size_t i = 0; i < 3; ++i) HKT_CHECK(in[i].defined(), op, ": ", which[i], " is undefined");
    const Tensor& a = in[0];
    HKT_CHECK(a.dim() >= 1, op, ": a must have at least one dim (the channels), got a scalar");
    HKT_CHECK(is_floating(a.dtype()), op, ": expected a floating a, got ", a.dtype(), shape_str(a.shape()));
    HKT_CHECK(in[1].shape() == a.shape(), op, ": b must have the shape of a ", shape_str(a.shape()), ", got ",
              shape_str(in[1].shape()));
    const int64_t C = a.size(-1);
    HKT_CHECK(in[2].shape() == Shape{C}, op, ": w must have shape [", C, "] (the last dim of a ",
              shape_str(a.shape()), "), got ", shape_str(in[2].shape()));
    for (size_t i = 1; i < 3; ++i) {
      HKT_CHECK(in[i].dtype() == a.dtype(), op, ": ", which[i], " is ", in[i].dtype(), " but a is ", a.dtype());
      HKT_CHECK(in[i].device() == a.device(), op, ": ", which[i], " is on ", in[i].device().str(), " but a is on ",
                a.device().str());
    }
    return {{a.shape(), a.dtype(), a.device()}};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    const Tensor a = contiguous(in[0]), b = contiguous(in[1]), w = contiguous(in[2]);
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    const int64_t C = a.size(-1), rows = C > 0 ? a.numel() / C : 0;
    mix_kernels.get(a.device(), a.dtype())(a.raw_data(), b.raw_data(), w.raw_data(), y.raw_data(), rows, C);
    a_ = a;
    b_ = b;
    w_ = w;
    return {y};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const Tensor w = w_.get(name());
    const Tensor g = contiguous(grads[0]);
    const bool want_w = needs_input_grad(2);
    const Tensor a = want_w ? a_.get(name()) : Tensor(), b = want_w ? b_.get(name()) : Tensor();
    const int64_t C = g.size(-1), rows = C > 0 ? g.numel() / C : 0;
    Tensor da, db, dw;
    if (needs_input_grad(0)) da = Tensor::empty(g.shape(), g.dtype(), g.device());
    if (needs_input_grad(1)) db = Tensor::empty(g.shape(), g.dtype(), g.device());
    if (want_w) dw = Tensor::empty({C}, g.dtype(), g.device());
    if (!da.defined() && !db.defined() && !dw.defined()) return {da, db, dw};
    mix_grad_kernels.get(g.device(), g.dtype())(data_or_null(a), data_or_null(b), w.raw_data(), g.raw_data(), rows,
                                                C, data_or_null(da), data_or_null(db), data_or_null(dw));
    return {da, db, dw};
  }

 private:
  SavedTensor a_, b_, w_;
};

}  // namespace

Tensor gated_mix(const Tensor& a, const Tensor& b, const Tensor& w) { return apply_op<GatedMixFn>({a, b, w}); }

}  // namespace hkt
