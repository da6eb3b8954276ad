// A callback run by backward() each time a leaf's gradient is complete: the
// leaf's AccumulateGrad node runs once per backward, after every consumer of
// the leaf, so the gradient it stores then is final for that backward. Data-
// parallel training (tasks/src/distributed.cpp) starts reducing a bucket of
// gradients as soon as all of its parameters have reported, while the backward
// goes on (PyTorch DDP's hooks on AccumulateGrad do the same).
#pragma once
#include <functional>

#include "hkt/core/tensor.hpp"

namespace hkt {

using GradReadyHook = std::function<void(const Tensor& leaf)>;

// Sets the callback of this thread's backward passes (an empty function: none)
// for the guard's lifetime; the previous one is restored afterwards.
class GradReadyGuard {
 public:
  explicit GradReadyGuard(GradReadyHook hook);
  ~GradReadyGuard();
  GradReadyGuard(const GradReadyGuard&) = delete;
  GradReadyGuard& operator=(const GradReadyGuard&) = delete;

 private:
  GradReadyHook previous_;
};

}  // namespace hkt
