// Factories, copies and in-place fills.
#include "hkt/ops/factory.hpp"

#include <cmath>

#include "hkt/core/function.hpp"
#include "hkt/core/grad_mode.hpp"
#include "hkt/kernels/registry.hpp"
#include "hkt/ops/elementwise.hpp"

namespace hkt {
namespace detail {
bool apply_thread_env();  // ops/src/threads.cpp
}  // namespace detail
namespace {

// HKT_NUM_THREADS, also when a static libhkt.a leaves threads.o out of a program.
const bool kThreadEnv = detail::apply_thread_env();

const bool kAutogradMath = [] {
  set_autograd_math({[](const Tensor& a, const Tensor& b) { return add(a, b); },
                     [](const TensorMeta& m, double v) { return full(m.shape, v, {m.dtype, m.device}); },
                     [](const Tensor& t) { return clone(t); }});
  return true;
}();

// Writes src (broadcast to dst's shape, any dtype) into dst's strided layout.
void copy_into(const Tensor& dst, const Tensor& src) {
  kernels::tables().copy.get(dst.device(), dst.dtype())(src.raw_data(), src.dtype(),
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
  kernels::tables().fill.get(opt.device, opt.dtype)(t.raw_data(), t.strides(), t.shape(), value);
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

static Tensor random_tensor(const KernelTable<sig::Random>& table, const Shape& shape, double a, double b,
                            TensorOptions opt, Generator* gen) {
  Generator& g = gen ? *gen : default_generator();
  Tensor t = Tensor::empty(shape, opt.dtype, opt.device);
  const uint64_t first = g.reserve(static_cast<uint64_t>(t.numel()));
  table.get(opt.device, opt.dtype)(t.raw_data(), t.numel(), g.seed(), first, a, b);
  return finish(t, opt);
}
Tensor uniform(const Shape& s, double lo, double hi, TensorOptions opt, Generator* gen) {
  return random_tensor(kernels::tables().uniform, s, lo, hi, opt, gen);
}
Tensor normal(const Shape& s, double mean, double std, TensorOptions opt, Generator* gen) {
  return random_tensor(kernels::tables().normal, s, mean, std, opt, gen);
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
    kernels::tables().transfer.get(from_.is_cpu() ? to_ : from_, y.dtype())(y.raw_data(), to_, src.raw_data(), from_,
                                                                            nbytes);
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
  const Device dev = device.is_cpu() ? t.device() : device;
  HKT_CHECK(backend_built(dev.type), "to_device: copying from ", t.device().str(), " to ", device.str(),
            " needs the CUDA backend, which this build does not have (configure with -DHKT_CUDA=ON)");
  if (!device.is_cpu()) kernels::tables().require_device.get(device, DType::Float32)(device.index, "to_device");
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
  kernels::tables().fill.get(dst.device(), dst.dtype())(dst.raw_data(), dst.strides(), dst.shape(), value);
  dst.storage()->bump_version();
  return dst;
}
Tensor& zero_(Tensor& dst) { return fill_(dst, 0.0); }

}  // namespace hkt
