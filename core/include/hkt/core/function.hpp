// Function: the one mechanism by which every op -- built-in or user-defined --
// joins the framework. An op is a subclass with four parts:
//
//   name()     the op's name, used in every error message;
//   infer()    the shape rule: validates the inputs (shape, dtype, device) and
//              returns the metadata of each output;
//   forward()  computes the outputs (typically by looking up a kernel for the
//              device and dtype in a KernelTable, see <hkt/core/kernel_table.hpp>)
//              and saves what backward needs in members (use SavedTensor);
//   backward() maps the gradients of the outputs to the gradients of the
//              inputs, written with differentiable ops (so it runs on any
//              device) or with kernels of its own.
//
// apply(fn, inputs) checks the shape rule, runs forward with grad mode off,
// checks the outputs against the rule and, when an input requires a gradient,
// links the outputs into the graph. Inputs for which differentiable(i) is
// false (indices, masks) never receive a gradient.
#pragma once
#include <memory>
#include <vector>

#include "hkt/core/autograd.hpp"
#include "hkt/core/tensor.hpp"

namespace hkt {

class Function {
 public:
  virtual ~Function() = default;
  virtual const char* name() const = 0;
  virtual std::vector<TensorMeta> infer(const std::vector<Tensor>& inputs) const = 0;
  virtual std::vector<Tensor> forward(const std::vector<Tensor>& inputs,
                                      const std::vector<TensorMeta>& outputs) = 0;
  // grad_outputs has one defined tensor per output (zeros for unused ones).
  // Return one entry per input; an undefined Tensor means "no gradient".
  virtual std::vector<Tensor> backward(const std::vector<Tensor>& grad_outputs) = 0;
  virtual bool differentiable(size_t /*input*/) const { return true; }

  // In backward: whether input i needs a gradient (skip the work otherwise).
  bool needs_input_grad(size_t i) const { return i < needs_grad_.size() && needs_grad_[i]; }

 private:
  friend std::vector<Tensor> apply(const std::shared_ptr<Function>&, const std::vector<Tensor>&);
  std::vector<bool> needs_grad_;
};

// A tensor kept for backward: detached (no reference cycle through the graph)
// and stamped with its storage version, so that backward fails clearly if the
// tensor was modified in place after it was saved.
class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& t);
  SavedTensor& operator=(const Tensor& t) { return *this = SavedTensor(t); }
  // The saved tensor; `op` names the op in the error if it was modified.
  Tensor get(const char* op) const;
  bool defined() const { return t_.defined(); }

 private:
  Tensor t_;
  uint64_t version_ = 0;
};

std::vector<Tensor> apply(const std::shared_ptr<Function>& fn, const std::vector<Tensor>& inputs);

// Convenience for single-output ops: make_shared<F>(args...) applied to inputs.
template <class F, class... Args>
Tensor apply_op(const std::vector<Tensor>& inputs, Args&&... args) {
  return ::hkt::apply(std::make_shared<F>(std::forward<Args>(args)...), inputs)[0];
}

}  // namespace hkt
