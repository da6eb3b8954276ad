// Factories, copies and in-place fills.
#include "hkt/ops/factory.hpp"

#include <cmath>

#include "hkt/core/function.hpp"
#include "hkt/core/grad_mode.hpp"
#include "hkt/core/kernel_table.hpp"
#include "hkt/ops/elementwise.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/random.hpp"
#if HKT_WITH_CUDA
#include "kernels/cuda/kernels.hpp"
#include "kernels/cuda/runtime.hpp"
#endif

namespace hkt {
namespace detail {
bool apply_thread_env();  // ops/src/threads.cpp
}  // namespace detail
namespace {

// HKT_NUM_THREADS, also when a static libhkt.a leaves threads.o out of a program.
const bool kThreadEnv = detail::apply_thread_env();

using CopySig = void(const void* src, DType src_dtype, const Strides& ss, void* dst, const Strides& ds,
                     const Shape& shape);
using FillSig = void(void* dst, const Strides& ds, const Shape& shape, double v);
using RandSig = void(void* out, int64_t n, uint64_t seed, uint64_t first, double a, double b);

KernelTable<CopySig> copy_kernels{"copy"};
KernelTable<FillSig> fill_kernels{"fill"};
KernelTable<RandSig> uniform_kernels{"uniform"};
KernelTable<RandSig> normal_kernels{"normal"};

template <class D>
void cpu_copy(const void* src, DType sdt, const Strides& ss, void* dst, const Strides& ds, const Shape& shape) {
  dispatch_all(sdt, [&]<class S>() { cpu::copy<S, D>(static_cast<const S*>(src), ss, static_cast<D*>(dst), ds, shape); });
}
template <class T>
void cpu_fill(void* dst, const Strides& ds, const Shape& shape, double v) {
  cpu::fill<T>(static_cast<T*>(dst), ds, shape, static_cast<T>(v));
}
template <class T>
void cpu_uniform(void* out, int64_t n, uint64_t seed, uint64_t first, double lo, double hi) {
  cpu::rand_uniform<T>(static_cast<T*>(out), n, seed, first, lo, hi);
}
template <class T>
void cpu_normal(void* out, int64_t n, uint64_t seed, uint64_t first, double mean, double std) {
  cpu::rand_normal<T>(static_cast<T*>(out), n, seed, first, mean, std);
}

const bool kRegistered = [] {
  constexpr auto C = DeviceType::CPU;
  copy_kernels.set(C, DType::Float32, &cpu_copy<float>);
  copy_kernels.set(C, DType::Float64, &cpu_copy<double>);
  copy_kernels.set(C, DType::Int64, &cpu_copy<int64_t>);
  copy_kernels.set(C, DType::Bool, &cpu_copy<bool>);
  fill_kernels.set(C, DType::Float32, &cpu_fill<float>);
  fill_kernels.set(C, DType::Float64, &cpu_fill<double>);
  fill_kernels.set(C, DType::Int64, &cpu_fill<int64_t>);
  fill_kernels.set(C, DType::Bool, &cpu_fill<bool>);
  uniform_kernels.set(C, DType::Float32, &cpu_uniform<float>);
  uniform_kernels.set(C, DType::Float64, &cpu_uniform<double>);
  normal_kernels.set(C, DType::Float32, &cpu_normal<float>);
  normal_kernels.set(C, DType::Float64, &cpu_normal<double>);
#if HKT_WITH_CUDA
  constexpr auto G = DeviceType::CUDA;
  copy_kernels.set(G, DType::Float32, &cuda::copy_cast<float>);
  copy_kernels.set(G, DType::Float64, &cuda::copy_cast<double>);
  copy_kernels.set(G, DType::Int64, &cuda::copy_cast<int64_t>);
  copy_kernels.set(G, DType::Bool, &cuda::copy_cast<bool>);
  fill_kernels.set(G, DType::Float32, &cuda::fill<float>);
  fill_kernels.set(G, DType::Float64, &cuda::fill<double>);
  fill_kernels.set(G, DType::Int64, &cuda::fill<int64_t>);
  fill_kernels.set(G, DType::Bool, &cuda::fill<bool>);
  uniform_kernels.set(G, DType::Float32, &cuda::rand_uniform<float>);
  uniform_kernels.set(G, DType::Float64, &cuda::rand_uniform<double>);
  normal_kernels.set(G, DType::Float32, &cuda::rand_normal<float>);
  normal_kernels.set(G, DType::Float64, &cuda::rand_normal<double>);
#endif
  set_autograd_math({[](const Tensor& a, const Tensor& b) { return add(a, b); },
                     [](const TensorMeta& m, double v) { return full(m.shape, v, {m.dtype, m.device}); },
                     [](const Tensor& t) { return clone(t); }});
  return true;
}();

// Writes src (broadcast to dst's shape, any dtype) into dst's strided layout.
void copy_into(const Tensor& dst, const Tensor& src) {
  copy_kernels.get(dst.device(), dst.dtype())(src.raw_data(), src.dtype(),
                                              broadcast_strides(src.shape(), src.strides(), dst.shape()),
                                              dst.raw_data(), dst.strides(), dst.shape());
}

Tensor finish(Tensor t, const TensorOptions& opt) {
  if (opt.requires_grad) t.set_requires_grad(true);
  return t;
}

// Contiguous copy with an optional dtype change. Gradient: cast back. Named
// "copy" when the dtype stays (clone, contiguous), so that profiles tell
// layout copies from casts.
class CopyFn final : public Function {
 public:
  CopyFn(DType from, DType to) : to_(to), from_(from) {}
  const char* name() const override { return from_ == to_ ? "copy" : "to_dtype"; }
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    return {{in[0].shape(), to_, in[0].device()}};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    copy_into(y, in[0]);
    return {y};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override {
    return {from_ == to_ ? g[0] : to_dtype(g[0], from_)};
  }

 private:
  DType to_, from_;
};

void check_inplace(const Tensor& dst, const char* op) {
  HKT_CHECK(dst.defined(), op, ": destination is undefined");
  HKT_CHECK(!(dst.requires_grad() && GradMode::is_enabled()), op,
            ": in-place write to a tensor that requires grad; do it under NoGradGuard");
}

}  // namespace

Tensor empty(const Shape& shape, TensorOptions opt) {
  return finish(Tensor::empty(shape, opt.dtype, opt.device), opt);
}

Tensor full(const Shape& shape, double value, TensorOptions opt) {
  Tensor t = Tensor::empty(shape, opt.dtype, opt.device);
  fill_kernels.get(opt.device, opt.dtype)(t.raw_data(), t.strides(), t.shape(), value);
  return finish(t, opt);
}
Tensor zeros(const Shape& shape, TensorOptions opt) { return full(shape, 0.0, opt); }
Tensor ones(const Shape& shape, TensorOptions opt) { return full(shape, 1.0, opt); }
Tensor zeros_like(const Tensor& t) { return full(t.shape(), 0.0, {t.dtype(), t.device()}); }
Tensor ones_like(const Tensor& t) { return full(t.shape(), 1.0, {t.dtype(), t.device()}); }
Tensor full_like(const Tensor& t, double v) { return full(t.shape(), v, {t.dtype(), t.device()}); }
Tensor scalar_tensor(double value, DType dtype, Device device) { return full({}, value, {dtype, device}); }

Tensor arange(int64_t end, TensorOptions opt) { return arange(0.0, static_cast<double>(end), 1.0, opt); }

Tensor arange(double start, double end, double step, TensorOptions opt) {
  HKT_CHECK(step != 0.0, "arange: step must be non-zero");
  const double span = (end - start) / step;
  const int64_t n = span > 0 ? static_cast<int64_t>(std::ceil(span)) : 0;
  Tensor host = Tensor::empty({n}, opt.dtype, Device::cpu());
  dispatch_all(opt.dtype, [&]<class T>() {
    T* p = host.data<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + static_cast<double>(i) * step);
  });
  return finish(to_device(host, opt.device), opt);
}

static Tensor random_tensor(const KernelTable<RandSig>& table, const Shape& shape, double a, double b,
                            TensorOptions opt, Generator* gen) {
  Generator& g = gen ? *gen : default_generator();
  Tensor t = Tensor::empty(shape, opt.dtype, opt.device);
  const uint64_t first = g.reserve(static_cast<uint64_t>(t.numel()));
  table.get(opt.device, opt.dtype)(t.raw_data(), t.numel(), g.seed(), first, a, b);
  return finish(t, opt);
}
Tensor uniform(const Shape& s, double lo, double hi, TensorOptions opt, Generator* gen) {
  return random_tensor(uniform_kernels, s, lo, hi, opt, gen);
}
Tensor normal(const Shape& s, double mean, double std, TensorOptions opt, Generator* gen) {
  return random_tensor(normal_kernels, s, mean, std, opt, gen);
}
Tensor randn(const Shape& s, TensorOptions opt, Generator* gen) { return normal(s, 0.0, 1.0, opt, gen); }
Tensor rand(const Shape& s, TensorOptions opt, Generator* gen) { return uniform(s, 0.0, 1.0, opt, gen); }

template <class T>
static Tensor from_host(const std::vector<T>& v, const Shape& shape, TensorOptions opt) {
  HKT_CHECK(static_cast<int64_t>(v.size()) == numel_of(shape), "from_vector: ", v.size(),
            " values do not fill shape ", shape_str(shape), " (", numel_of(shape), " elements)");
  Tensor host = Tensor::empty(shape, dtype_of<T>::value, Device::cpu());
  std::copy(v.begin(), v.end(), host.data<T>());
  if (opt.dtype != host.dtype()) host = to_dtype(host, opt.dtype);
  return finish(to_device(host, opt.device), opt);
}
Tensor from_vector(const std::vector<float>& v, const Shape& s, TensorOptions o) { return from_host(v, s, o); }
Tensor from_vector(const std::vector<double>& v, const Shape& s, TensorOptions o) { return from_host(v, s, o); }
Tensor from_vector(const std::vector<int64_t>& v, const Shape& s, TensorOptions o) { return from_host(v, s, o); }

Tensor to_dtype(const Tensor& t, DType dtype) {
  HKT_CHECK(t.defined(), "to_dtype: the tensor is undefined");
  return apply_op<CopyFn>({t}, t.dtype(), dtype);
}
Tensor clone(const Tensor& t) {
  HKT_CHECK(t.defined(), "clone: the tensor is undefined");
  return apply_op<CopyFn>({t}, t.dtype(), t.dtype());
}
Tensor contiguous(const Tensor& t) { return t.is_contiguous() ? t : clone(t); }

namespace {
// Copy to another device (same dtype, contiguous result). Gradient: copied back.
class ToDeviceFn final : public Function {
 public:
  explicit ToDeviceFn(Device to) : to_(to) {}
  const char* name() const override { return "to_device"; }
  std::vector<TensorMeta> infer(const std::vector<Tensor>& in) const override {
    return {{in[0].shape(), in[0].dtype(), to_}};
  }
  std::vector<Tensor> forward(const std::vector<Tensor>& in, const std::vector<TensorMeta>& out) override {
    from_ = in[0].device();
    const Tensor src = contiguous(in[0]);
    Tensor y = Tensor::empty(out[0].shape, out[0].dtype, out[0].device);
    const size_t nbytes = static_cast<size_t>(y.numel()) * dtype_size(y.dtype());
#if HKT_WITH_CUDA
    if (from_.is_cpu())
      cuda::copy_host_to_device(y.raw_data(), src.raw_data(), nbytes);
    else if (to_.is_cpu())
      cuda::copy_device_to_host(y.raw_data(), src.raw_data(), nbytes);
    else
      cuda::copy_device_to_device(y.raw_data(), src.raw_data(), nbytes);
#else
    (void)nbytes;
    throw Error(str_cat("to_device: copying from ", from_.str(), " to ", to_.str(),
                        " needs the CUDA backend, which this build does not have (configure with -DHKT_CUDA=ON)"));
#endif
    return {y};
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& g) override { return {to_device(g[0], from_)}; }

 private:
  Device to_;
  Device from_;
};
}  // namespace

Tensor to_device(const Tensor& t, Device device) {
  if (t.device() == device) return t;
#if HKT_WITH_CUDA
  if (device.type == DeviceType::CUDA) cuda::require_device(device.index, "to_device");
#else
  throw Error(str_cat("to_device: copying from ", t.device().str(), " to ", device.str(),
                      " needs the CUDA backend, which this build does not have (configure with -DHKT_CUDA=ON)"));
#endif
  return apply_op<ToDeviceFn>({t}, device);
}

Tensor& copy_(Tensor& dst, const Tensor& src) {
  check_inplace(dst, "copy_");
  HKT_CHECK(src.device() == dst.device(), "copy_: source is on ", src.device().str(), ", destination on ",
            dst.device().str());
  HKT_CHECK(broadcast_shapes(src.shape(), dst.shape(), "copy_") == dst.shape(), "copy_: source shape ",
            shape_str(src.shape()), " does not broadcast to destination shape ", shape_str(dst.shape()));
  // A source that overlaps the destination is copied out first.
  const Tensor s = src.storage() == dst.storage() ? clone(src.detach()) : src;
  copy_into(dst, s);
  dst.storage()->bump_version();
  return dst;
}

Tensor& fill_(Tensor& dst, double value) {
  check_inplace(dst, "fill_");
  fill_kernels.get(dst.device(), dst.dtype())(dst.raw_data(), dst.strides(), dst.shape(), value);
  dst.storage()->bump_version();
  return dst;
}
Tensor& zero_(Tensor& dst) { return fill_(dst, 0.0); }

}  // namespace hkt
