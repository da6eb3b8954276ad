// In-place optimizer updates and the gradient-norm helpers they need.
//
// Each update is one fused pass over a parameter, its gradient and its state,
// dispatched by device and dtype (float32, float64). They are not
// differentiable: they run under NoGradGuard, write through the tensors' own
// storage and bump the storage version of every tensor they modify. All
// tensors must be defined, contiguous, and of the parameter's shape, dtype
// and device; a mismatch throws hkt::Error naming the op and the tensor.
// Scalars (learning rate, bias corrections) are computed in double.
#pragma once
#include <cstdint>
#include <vector>

#include "hkt/core/tensor.hpp"

namespace hkt {

// SGD step with PyTorch's semantics (torch.optim.SGD):
//   d = grad + weight_decay * param
//   if momentum != 0:
//     buf = first_step ? d : momentum * buf + (1 - dampening) * d
//     d   = nesterov ? d + momentum * buf : buf
//   param -= lr * d
// momentum_buf may be undefined when momentum == 0 (it is then not touched).
// On the first step its previous contents are ignored (it may be empty()).
void sgd_update_(Tensor& param, const Tensor& grad, Tensor& momentum_buf, double lr, double momentum,
                 double dampening, double weight_decay, bool nesterov, bool first_step);

// AdamW step (Loshchilov & Hutter; torch.optim.AdamW with amsgrad = false),
// `step` >= 1 being this parameter's 1-based update count:
//   param -= lr * weight_decay * param
//   exp_avg    = beta1 * exp_avg    + (1 - beta1) * grad
//   exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad^2
//   m_hat = exp_avg / (1 - beta1^step),  v_hat = exp_avg_sq / (1 - beta2^step)
//   param -= lr * m_hat / (sqrt(v_hat) + eps)
void adamw_update_(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, double lr, double beta1,
                   double beta2, double eps, double weight_decay, int64_t step);

// The same AdamW step on many parameters at once, each with its own lr,
// weight decay and step count and the checks of adamw_update_ (all are
// checked before anything is written). On CUDA the parameters of one dtype
// are updated by a single kernel launch; on the CPU one pass each.
struct AdamWItem {
  Tensor param, grad, exp_avg, exp_avg_sq;  // handles: the update writes through them
  double lr = 0, weight_decay = 0;
  int64_t step = 1;
};
void adamw_update_multi_(const std::vector<AdamWItem>& items, double beta1, double beta2, double eps);
// sum(t^2) of a floating tensor, accumulated in double in a fixed order (the
// same bits for any thread count). A non-contiguous t is copied first.
double sum_of_squares(const Tensor& t);

// sum_of_squares of every tensor, each to the bit what sum_of_squares gives:
// on CUDA in a few launches for all of them and one copy to the host, where
// a loop of sum_of_squares waits for the GPU once per tensor (gradient
// clipping: nn::clip_grad_norm_). Tensors may differ in device and dtype.
std::vector<double> sum_of_squares_multi(const std::vector<Tensor>& ts);

// t *= factor in place (floating, contiguous; bumps the storage version).
// Refuses a tensor that requires grad while grad mode is on, like copy_.
void scale_(Tensor& t, double factor);
// scale_ of every tensor (each checked as scale_ checks it, all before any is
// written); on CUDA one launch per dtype and 64 tensors.
void scale_multi_(const std::vector<Tensor>& ts, double factor);

}  // namespace hkt
