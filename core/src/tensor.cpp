#include "hkt/core/tensor.hpp"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "hkt/core/autograd.hpp"

namespace hkt {

std::string meta_str(const TensorMeta& m) {
  return str_cat(dtype_name(m.dtype), shape_str(m.shape), " on ", m.device.str());
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape) HKT_CHECK(d >= 0, "empty: negative dimension in shape ", shape_str(shape));
  // The byte count, refusing sizes that do not fit in 64 bits (before any allocation).
  uint64_t nbytes = dtype_size(dtype);
  bool overflow = false;
  for (int64_t d : shape) overflow = __builtin_mul_overflow(nbytes, static_cast<uint64_t>(d), &nbytes) || overflow;
  for (int64_t d : shape)
    if (d == 0) nbytes = 0, overflow = false;
  HKT_CHECK(!overflow, "empty: a ", dtype_name(dtype), " tensor of shape ", shape_str(shape),
            " needs more than 2^64 bytes");
  auto impl = std::make_shared<TensorImpl>();
  try {
    impl->storage = std::make_shared<Storage>(static_cast<size_t>(nbytes), device);
  } catch (const Error& e) {
    throw Error(str_cat(e.what(), " (for a ", meta_str({shape, dtype, device}), " tensor)"));
  }
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::view_of(const Tensor& base, Shape shape, Strides strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = base.dtype();
  return Tensor(std::move(impl));
}

int64_t Tensor::size(int64_t d) const { return shape()[wrap_dim(d, dim(), "Tensor::size")]; }

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;
  int64_t expect = 1;
  for (size_t i = shape().size(); i-- > 0;) {
    if (shape()[i] == 1) continue;
    if (strides()[i] != expect) return false;
    expect *= shape()[i];
  }
  return true;
}

void* Tensor::raw_data() const {
  return static_cast<char*>(storage()->data()) + offset() * static_cast<int64_t>(dtype_size(dtype()));
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  const T* p = data<T>();
  std::vector<T> out(static_cast<size_t>(numel()));
  if (out.empty()) return out;
  std::vector<char> host;
  if (!device().is_cpu()) {
    // Another device: copy the span the view covers to the host first.
    int64_t extent = 1;
    for (size_t d = 0; d < shape().size(); ++d) {
      HKT_CHECK(strides()[d] >= 0, "to_vector: negative strides on ", device().str(), "; copy it to the cpu first");
      extent += (shape()[d] - 1) * strides()[d];
    }
    host.resize(static_cast<size_t>(extent) * sizeof(T));
    get_allocator(device().type)->copy_to_host(host.data(), p, host.size(), device());
    p = reinterpret_cast<const T*>(host.data());
  }
  for_each_offset(shape(), strides(), [&](int64_t i, int64_t off) { out[i] = p[off]; });
  return out;
}

template <class T>
T Tensor::item() const {
  HKT_CHECK(numel() == 1, "item: tensor has ", numel(), " elements (shape ", shape_str(shape()),
            "), expected exactly 1");
  return to_vector<T>()[0];
}

double Tensor::item_double() const {
  return dispatch_all(dtype(), [&]<class T>() { return static_cast<double>(item<T>()); });
}

template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<bool> Tensor::to_vector<bool>() const;
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template int64_t Tensor::item<int64_t>() const;
template bool Tensor::item<bool>() const;

Tensor& Tensor::set_requires_grad(bool on) {
  if (on) {
    HKT_CHECK(is_floating(dtype()), "set_requires_grad: only floating tensors can require a gradient; this one is ",
              dtype());
    HKT_CHECK(is_leaf(), "set_requires_grad: only leaf tensors can be marked; use detach() first");
  }
  impl().requires_grad = on;
  return *this;
}

void Tensor::set_grad(const Tensor& g) {
  if (g.defined())
    HKT_CHECK(g.meta() == meta(), "set_grad: gradient is ", meta_str(g.meta()), " but the tensor is ",
              meta_str(meta()));
  impl().grad = g.impl_ptr();
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  run_backward(*this, gradient, retain_graph);
}

Tensor Tensor::detach() const { return view_of(*this, shape(), strides(), offset()); }

std::string Tensor::str() const {
  if (!defined()) return "Tensor(undefined)";
  std::ostringstream os;
  os << "Tensor(";
  if (device().is_cpu()) {
    const int64_t n = numel();
    const int64_t show = n <= 20 ? n : 10;
    os << "[";
    dispatch_all(dtype(), [&]<class T>() {
      const T* p = data<T>();
      for_each_offset(shape(), strides(), [&](int64_t i, int64_t off) {
        if (i < show || (n > 20 && i >= n - 3)) {
          if (i > 0) os << ", ";
          if (n > 20 && i == n - 3) os << "..., ";
          if constexpr (std::is_floating_point_v<T>) os << std::setprecision(6) << p[off];
          else os << static_cast<int64_t>(p[off]);
        }
      });
    });
    os << "], ";
  }
  os << "shape=" << shape_str(shape()) << ", dtype=" << dtype_name(dtype());
  if (!device().is_cpu()) os << ", device=" << device().str();
  if (requires_grad()) os << ", requires_grad=true";
  os << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace hkt
