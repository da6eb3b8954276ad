// Tensor: a dtype, a shape and strides over shared storage on a device, plus
// the autograd metadata (requires_grad, grad, grad_fn).
//
// Tensor is a cheap handle (shared_ptr to TensorImpl); copies alias. The
// operations on tensors (arithmetic, views, reductions...) are free functions
// in <hkt/ops/...>; this class only holds the bookkeeping.
#pragma once
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "hkt/core/dtype.hpp"
#include "hkt/core/shape.hpp"
#include "hkt/core/storage.hpp"

namespace hkt {

class Node;
class Tensor;

struct TensorMeta {
  Shape shape;
  DType dtype = DType::Float32;
  Device device;
  bool operator==(const TensorMeta&) const = default;
};
std::string meta_str(const TensorMeta& m);  // "float32[2, 3] on cpu"

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements
  Shape shape;
  Strides strides;
  DType dtype = DType::Float32;
  // autograd
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;  // null for leaves
  uint32_t output_nr = 0;         // which output of grad_fn this is
  std::shared_ptr<TensorImpl> grad;
  std::weak_ptr<Node> grad_accumulator;  // cached for leaves
};

class Tensor {
 public:
  Tensor() = default;  // undefined
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // Uninitialised contiguous tensor (use hkt::zeros etc. for initialised ones).
  static Tensor empty(const Shape& shape, DType dtype = DType::Float32, Device device = Device::cpu());
  // A view of `base`'s storage with the given geometry (no autograd link; the
  // view ops in <hkt/ops/view.hpp> add that).
  static Tensor view_of(const Tensor& base, Shape shape, Strides strides, int64_t offset);

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  const Strides& strides() const { return impl().strides; }
  int64_t dim() const { return static_cast<int64_t>(impl().shape.size()); }
  int64_t size(int64_t d) const;  // negative d counts from the end
  int64_t numel() const { return numel_of(impl().shape); }
  int64_t offset() const { return impl().offset; }
  DType dtype() const { return impl().dtype; }
  Device device() const { return impl().storage->device(); }
  TensorMeta meta() const { return {shape(), dtype(), device()}; }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return impl().storage; }

  // Pointer to the first element (storage + offset). data<T>() checks T.
  void* raw_data() const;
  template <class T>
  T* data() const {
    HKT_CHECK(dtype_of<T>::value == dtype(), "Tensor::data: requested ", dtype_of<T>::value,
              " but the tensor is ", dtype());
    return static_cast<T*>(raw_data());
  }
  // Host copies (CPU tensors; any strides). item() needs numel() == 1.
  template <class T>
  std::vector<T> to_vector() const;
  template <class T>
  T item() const;
  double item_double() const;  // any dtype, converted

  // Autograd.
  bool requires_grad() const { return impl().requires_grad; }
  // Only floating leaves may require grad.
  Tensor& set_requires_grad(bool on);
  bool is_leaf() const { return impl().grad_fn == nullptr; }
  const std::shared_ptr<Node>& grad_fn() const { return impl().grad_fn; }
  uint32_t output_nr() const { return impl().output_nr; }
  Tensor grad() const { return Tensor(impl().grad); }
  void set_grad(const Tensor& g);
  // Reverse-mode differentiation from this tensor. Without `gradient` the
  // tensor must hold one element (the gradient is 1). The graph is freed
  // afterwards unless retain_graph is set.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  // Same storage, no autograd history, requires_grad false.
  Tensor detach() const;

  TensorImpl* unsafe_impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  std::string str() const;  // values (elided when large), shape and dtype

 private:
  TensorImpl& impl() const {
    HKT_CHECK(impl_, "use of an undefined Tensor");
    return *impl_;
  }
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Calls f(linear_index, element_offset) for each element of a strided layout in
// row-major logical order (offsets are relative to the tensor's offset).
template <class F>
void for_each_offset(const Shape& shape, const Strides& strides, F&& f) {
  const int64_t n = numel_of(shape);
  const size_t nd = shape.size();
  std::vector<int64_t> idx(nd, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    f(i, off);
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < shape[d]) {
        off += strides[d];
        break;
      }
      off -= strides[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

}  // namespace hkt
