// Optimizers (SGD, AdamW), parameter groups and gradient clipping.
//
//   auto opt = hkt::nn::AdamW(hkt::nn::decay_groups(model, 3e-4, 0.01));
//   opt.set_schedule(hkt::nn::LRSchedule::warmup_cosine(100, total, 0.1));
//   for (int64_t s = 0; s < total; ++s) {
//     opt.zero_grad();
//     loss(...).backward();
//     hkt::nn::clip_grad_norm_(model.parameters(), 1.0);
//     opt.step();  // at the schedule's rate for step opt.steps()
//   }
//
// Semantics follow PyTorch's torch.optim: parameters without a gradient are
// skipped by step() (their state is created on their first update, and
// AdamW's bias correction counts each parameter's own updates).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hkt/core/tensor.hpp"
#include "hkt/models/module.hpp"
#include "hkt/models/schedule.hpp"
#include "hkt/ops/optim.hpp"

namespace hkt::nn {

// Parameters sharing a learning rate and a weight decay. `lr` is the base
// rate: the rate used by step() is lr * the optimizer's lr factor (see
// Optimizer::set_schedule and set_lr_factor), so a schedule scales every group alike.
struct ParamGroup {
  std::vector<Tensor> params;
  double lr = 0.0;  // must be set: the optimizers require a positive rate
  double weight_decay = 0.0;
  std::string name;
};

// Two groups of the module's trainable parameters (requires_grad), in the
// module's parameter order: "decay" holds every parameter with dim >= 2
// (Linear and Embedding weights, conv taps [C, k]) with `weight_decay`;
// "no_decay" every parameter with dim < 2 (biases, LayerNorm weights and
// biases) with weight decay 0. Both use `lr`. An empty group is left out.
std::vector<ParamGroup> decay_groups(const Module& m, double lr, double weight_decay);
// Which parameters a rule decays. Matrices: every parameter with dim >= 2
// (decay_groups above). Weights: the same except the classifier's positional
// table ("pos") and HKT's level logits ("theta", whose decay pulls the level
// weights lambda toward uniform); biases, norms and the gate are never decayed.
enum class DecayRule { Matrices, Weights };
std::vector<ParamGroup> decay_groups(const Module& m, double lr, double weight_decay, DecayRule rule);

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient, then steps() += 1.
  // With a schedule, the factor is first set to schedule()->factor(steps()).
  void step();
  // Drops the gradients of all parameters (they become undefined).
  void zero_grad();
  // The optimizer owns its learning-rate schedule: from now on every step()
  // sets the factor of every group to s.factor(steps()) before its update (s
  // is validated here). The schedule is not part of state_dict(): whoever
  // restores a state sets the schedule again (a resumed run may be given a
  // longer one).
  void set_schedule(const LRSchedule& s);
  const std::optional<LRSchedule>& schedule() const { return schedule_; }
  // The rate of group g becomes groups()[g].lr * f for every group (f >= 0);
  // with a schedule, the next step() sets it again.
  void set_lr_factor(double f);
  double lr_factor(size_t group) const;
  // The rate of a group: base lr times its factor (with a schedule: the rate
  // of the last step()).
  double lr(size_t group) const;
  // Number of step() calls so far (restored by load_state_dict).
  int64_t steps() const { return steps_; }
  const std::vector<ParamGroup>& groups() const { return groups_; }
  size_t num_params() const { return params_.size(); }
  const std::string& name() const { return name_; }

  // A snapshot (fresh copies) of the optimizer's state:
  //   "step"                 int64 0-d: steps()
  //   "group.<g>.lr_factor"  float64 0-d: the factor of group g
  //   "state.<i>.<name>"     per-parameter state, i = the parameter's index
  //                          counted over all groups in order; present only
  //                          for parameters that have been updated.
  // The per-parameter names are those of the optimizer (SGD:
  // momentum_buffer; AdamW: exp_avg, exp_avg_sq and step, int64 0-d).
  virtual NamedTensors state_dict() const;
  // Restores a state_dict() taken from an optimizer of the same kind over
  // parameters of the same shapes and dtypes. Strict: every required name
  // present, nothing unexpected, shapes and dtypes equal; a parameter's state
  // is all there or absent. Errors name the tensor; on error nothing changes.
  // Values are copied into fresh tensors on the devices the state lives on: the
  // parameters' devices (AdamW's int64 `step` counters stay on the CPU).
  virtual void load_state_dict(const NamedTensors& state);

 protected:
  struct StateSpec {
    std::string name;
    Shape shape;
    DType dtype;
    Device device;
  };
  Optimizer(std::string name, std::vector<ParamGroup> groups);

  // Updates parameter i (flat index) with its (contiguous) gradient.
  virtual void update(size_t i, Tensor& param, const Tensor& grad, double lr, double weight_decay) = 0;
  // Called once after update() has been called for every parameter of a
  // step: an optimizer may queue its updates there and apply them together.
  virtual void finish_step() {}
  // The state a parameter has once updated, in order (empty: stateless).
  virtual std::vector<StateSpec> state_spec(const Tensor& param) const = 0;

  std::string name_;
  std::vector<ParamGroup> groups_;
  std::vector<Tensor> params_;            // flat, over all groups
  std::vector<size_t> group_of_;          // group index of params_[i]
  std::vector<NamedTensors> state_;       // per parameter, in state_spec order; empty until updated
  std::vector<double> factors_;           // per group
  std::optional<LRSchedule> schedule_;    // none: the factors set_lr_factor gave
  int64_t steps_ = 0;
};

// SGD with momentum, dampening, Nesterov and L2 weight decay added to the
// gradient (torch.optim.SGD). Nesterov needs momentum > 0 and dampening 0.
class SGD : public Optimizer {
 public:
  explicit SGD(std::vector<ParamGroup> groups, double momentum = 0.0, double dampening = 0.0, bool nesterov = false);
  SGD(std::vector<Tensor> params, double lr, double weight_decay = 0.0, double momentum = 0.0,
      double dampening = 0.0, bool nesterov = false);
  double momentum() const { return momentum_; }
  double dampening() const { return dampening_; }
  bool nesterov() const { return nesterov_; }

 protected:
  void update(size_t i, Tensor& param, const Tensor& grad, double lr, double weight_decay) override;
  std::vector<StateSpec> state_spec(const Tensor& param) const override;

 private:
  double momentum_, dampening_;
  bool nesterov_;
};

// AdamW with decoupled weight decay (torch.optim.AdamW, amsgrad = false).
class AdamW : public Optimizer {
 public:
  explicit AdamW(std::vector<ParamGroup> groups, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8);
  AdamW(std::vector<Tensor> params, double lr, double weight_decay = 0.01, double beta1 = 0.9,
        double beta2 = 0.999, double eps = 1e-8);
  double beta1() const { return beta1_; }
  double beta2() const { return beta2_; }
  double eps() const { return eps_; }

 protected:
  // Queues the parameter; finish_step() updates all of them with one
  // adamw_update_multi_ (one kernel launch per dtype on CUDA).
  void update(size_t i, Tensor& param, const Tensor& grad, double lr, double weight_decay) override;
  void finish_step() override;
  std::vector<StateSpec> state_spec(const Tensor& param) const override;

 private:
  double beta1_, beta2_, eps_;
  std::vector<AdamWItem> pending_;
  std::vector<Tensor> pending_counts_;  // their step counters, bumped once the update is done
};

// Scales the gradients of `params` in place so that their global L2 norm is
// at most max_norm (> 0). The norm over all gradients (parameters without a
// gradient are skipped, one listed twice counts once) is accumulated in
// double in parameter order; when it exceeds max_norm every gradient is
// multiplied by max_norm / (norm + 1e-6). Returns the norm before clipping.
// If that norm is not finite (inf or NaN gradients), the gradients are left
// untouched and the norm is returned, so the caller can detect it and skip
// the step.
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm);

}  // namespace hkt::nn
