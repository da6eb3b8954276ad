// Optimizers, parameter groups and gradient clipping; the updates themselves
// are the fused ops of hkt/ops/optim.hpp.
#include "hkt/models/optim.hpp"

#include <cmath>
#include <map>
#include <set>

#include "hkt/core/grad_mode.hpp"
#include "hkt/core/profiler.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/optim.hpp"

namespace hkt::nn {

std::vector<ParamGroup> decay_groups(const Module& m, double lr, double weight_decay) {
  return decay_groups(m, lr, weight_decay, DecayRule::Matrices);
}

std::vector<ParamGroup> decay_groups(const Module& m, double lr, double weight_decay, DecayRule rule) {
  ParamGroup decay{{}, lr, weight_decay, "decay"};
  ParamGroup no_decay{{}, lr, 0.0, "no_decay"};
  const auto leaf = [](const std::string& name) {
    const size_t dot = name.rfind('.');
    return dot == std::string::npos ? name : name.substr(dot + 1);
  };
  for (const auto& [n, t] : m.named_parameters()) {
    if (!t.requires_grad()) continue;
    bool decayed = t.dim() >= 2;
    if (rule == DecayRule::Weights && (n == "pos" || leaf(n) == "theta")) decayed = false;
    (decayed ? decay : no_decay).params.push_back(t);
  }
  std::vector<ParamGroup> out;
  if (!decay.params.empty()) out.push_back(std::move(decay));
  if (!no_decay.params.empty()) out.push_back(std::move(no_decay));
  HKT_CHECK(!out.empty(), "decay_groups: the ", m.type_name(), " has no trainable parameters");
  return out;
}

// --- Optimizer --------------------------------------------------------------

Optimizer::Optimizer(std::string name, std::vector<ParamGroup> groups)
    : name_(std::move(name)), groups_(std::move(groups)) {
  HKT_CHECK(!groups_.empty(), name_, ": no parameter groups given");
  std::set<const TensorImpl*> seen;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const ParamGroup& grp = groups_[g];
    const std::string label = str_cat("group ", g, grp.name.empty() ? "" : " ('" + grp.name + "')");
    HKT_CHECK(std::isfinite(grp.lr) && grp.lr > 0.0, name_, ": ", label,
              " needs a positive finite learning rate, got lr = ", grp.lr);
    HKT_CHECK(std::isfinite(grp.weight_decay) && grp.weight_decay >= 0.0, name_, ": ", label,
              " needs weight_decay >= 0, got ", grp.weight_decay);
    for (size_t k = 0; k < grp.params.size(); ++k) {
      const Tensor& p = grp.params[k];
      HKT_CHECK(p.defined(), name_, ": parameter ", k, " of ", label, " is undefined");
      HKT_CHECK(is_floating(p.dtype()), name_, ": parameter ", k, " of ", label, " is ", meta_str(p.meta()),
                "; only float32 and float64 parameters can be optimized");
      HKT_CHECK(seen.insert(p.unsafe_impl()).second, name_, ": parameter ", k, " of ", label,
                " appears more than once in the parameter groups");
      params_.push_back(p);
      group_of_.push_back(g);
    }
  }
  HKT_CHECK(!params_.empty(), name_, ": the parameter groups hold no parameters");
  state_.resize(params_.size());
  factors_.assign(groups_.size(), 1.0);
}

void Optimizer::step() {
  NoGradGuard no_grad;
  profiler::Scope timed("optimizer.step");
  if (schedule_) set_lr_factor(schedule_->factor(steps_));
  // Check every gradient first, so that a bad one leaves all parameters untouched.
  std::vector<Tensor> grads(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor g = params_[i].grad();
    if (!g.defined()) continue;
    HKT_CHECK(g.meta() == params_[i].meta(), name_, ".step: the gradient of parameter ", i, " is ",
              meta_str(g.meta()), " but the parameter is ", meta_str(params_[i].meta()));
    grads[i] = contiguous(g);
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!grads[i].defined()) continue;
    const size_t g = group_of_[i];
    update(i, params_[i], grads[i], groups_[g].lr * factors_[g], groups_[g].weight_decay);
  }
  finish_step();
  ++steps_;
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.set_grad(Tensor());
}

void Optimizer::set_schedule(const LRSchedule& s) {
  s.validate();
  schedule_ = s;
}

void Optimizer::set_lr_factor(double f) {
  HKT_CHECK(std::isfinite(f) && f >= 0.0, name_, ".set_lr_factor: the factor must be finite and >= 0, got ", f);
  factors_.assign(groups_.size(), f);
}

double Optimizer::lr_factor(size_t group) const {
  HKT_CHECK(group < groups_.size(), name_, ": group ", group, " out of range (", groups_.size(), " groups)");
  return factors_[group];
}

double Optimizer::lr(size_t group) const { return lr_factor(group) * groups_[group].lr; }

NamedTensors Optimizer::state_dict() const {
  NoGradGuard no_grad;
  NamedTensors out;
  out.emplace_back("step", scalar_tensor(0.0, DType::Int64));
  *out.back().second.data<int64_t>() = steps_;
  for (size_t g = 0; g < groups_.size(); ++g)
    out.emplace_back(str_cat("group.", g, ".lr_factor"), scalar_tensor(factors_[g], DType::Float64));
  for (size_t i = 0; i < params_.size(); ++i)
    for (const auto& [n, t] : state_[i]) out.emplace_back(str_cat("state.", i, ".", n), clone(t));
  return out;
}

void Optimizer::load_state_dict(const NamedTensors& state) {
  const std::string op = name_ + ".load_state_dict";
  NoGradGuard no_grad;
  std::map<std::string, const Tensor*> given;
  for (const auto& [n, t] : state) {
    HKT_CHECK(given.emplace(n, &t).second, op, ": tensor '", n, "' given twice");
    HKT_CHECK(t.defined(), op, ": tensor '", n, "' is undefined");
  }
  std::set<std::string> used;
  auto find = [&](const std::string& n) -> const Tensor* {
    auto it = given.find(n);
    if (it == given.end()) return nullptr;
    used.insert(n);
    return it->second;
  };
  auto require = [&](const std::string& n, const Shape& shape, DType dtype, const char* what) -> const Tensor& {
    const Tensor* t = find(n);
    HKT_CHECK(t, op, ": missing tensor '", n, "' (", what, ")");
    HKT_CHECK(t->shape() == shape, op, ": tensor '", n, "' has shape ", shape_str(t->shape()), " but ", name_,
              " expects ", shape_str(shape));
    HKT_CHECK(t->dtype() == dtype, op, ": tensor '", n, "' is ", t->dtype(), " but ", name_, " expects ", dtype);
    return *t;
  };
  auto host = [](const Tensor& t) { return to_device(t.detach(), Device::cpu()); };

  // Unexpected names first: they usually mean a state from another optimizer.
  std::set<std::string> known{"step"};
  for (size_t g = 0; g < groups_.size(); ++g) known.insert(str_cat("group.", g, ".lr_factor"));
  std::vector<std::vector<StateSpec>> specs(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    specs[i] = state_spec(params_[i]);
    for (const auto& s : specs[i]) known.insert(str_cat("state.", i, ".", s.name));
  }
  for (const auto& [n, t] : state)
    HKT_CHECK(known.count(n), op, ": unexpected tensor '", n, "' (", meta_str(t.meta()), ") for this ", name_,
              " over ", params_.size(), " parameters in ", groups_.size(), " groups");

  const int64_t steps = host(require("step", {}, DType::Int64, "the step count")).item<int64_t>();
  HKT_CHECK(steps >= 0, op, ": tensor 'step' holds ", steps, ", expected >= 0");
  std::vector<double> factors(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) {
    const std::string n = str_cat("group.", g, ".lr_factor");
    factors[g] = host(require(n, {}, DType::Float64, "a group's lr factor")).item<double>();
    HKT_CHECK(std::isfinite(factors[g]) && factors[g] >= 0.0, op, ": tensor '", n, "' holds ", factors[g],
              ", expected a finite factor >= 0");
  }
  std::vector<NamedTensors> fresh(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    size_t present = 0;
    for (const auto& s : specs[i]) present += given.count(str_cat("state.", i, ".", s.name));
    if (present == 0) continue;  // this parameter was never updated
    for (const auto& s : specs[i]) {
      const std::string n = str_cat("state.", i, ".", s.name);
      const Tensor& src = require(n, s.shape, s.dtype, "the rest of this parameter's state is present");
      Tensor copy = src.device() == s.device ? clone(src.detach()) : contiguous(to_device(src.detach(), s.device));
      fresh[i].emplace_back(s.name, copy);
    }
  }
  // Every name was checked above, and nothing has been modified yet.
  steps_ = steps;
  factors_ = std::move(factors);
  state_ = std::move(fresh);
}

// --- SGD --------------------------------------------------------------------

SGD::SGD(std::vector<ParamGroup> groups, double momentum, double dampening, bool nesterov)
    : Optimizer("SGD", std::move(groups)), momentum_(momentum), dampening_(dampening), nesterov_(nesterov) {
  HKT_CHECK(std::isfinite(momentum) && momentum >= 0.0, "SGD: momentum must be finite and >= 0, got ", momentum);
  HKT_CHECK(std::isfinite(dampening), "SGD: dampening must be finite, got ", dampening);
  HKT_CHECK(!nesterov || (momentum > 0.0 && dampening == 0.0),
            "SGD: nesterov needs momentum > 0 and dampening = 0, got momentum = ", momentum,
            ", dampening = ", dampening);
}

SGD::SGD(std::vector<Tensor> params, double lr, double weight_decay, double momentum, double dampening,
         bool nesterov)
    : SGD(std::vector<ParamGroup>{ParamGroup{std::move(params), lr, weight_decay, ""}}, momentum, dampening,
          nesterov) {}

std::vector<Optimizer::StateSpec> SGD::state_spec(const Tensor& p) const {
  if (momentum_ == 0.0) return {};
  return {{"momentum_buffer", p.shape(), p.dtype(), p.device()}};
}

void SGD::update(size_t i, Tensor& param, const Tensor& grad, double lr, double weight_decay) {
  if (momentum_ == 0.0) {
    Tensor none;
    sgd_update_(param, grad, none, lr, 0.0, dampening_, weight_decay, false, true);
    return;
  }
  NamedTensors& s = state_[i];
  if (s.empty()) {  // first update: the buffer starts as the gradient
    Tensor buf = empty(param.shape(), {param.dtype(), param.device()});
    sgd_update_(param, grad, buf, lr, momentum_, dampening_, weight_decay, nesterov_, true);
    s.emplace_back("momentum_buffer", buf);
  } else {
    sgd_update_(param, grad, s[0].second, lr, momentum_, dampening_, weight_decay, nesterov_, false);
  }
}

// --- AdamW ------------------------------------------------------------------

AdamW::AdamW(std::vector<ParamGroup> groups, double beta1, double beta2, double eps)
    : Optimizer("AdamW", std::move(groups)), beta1_(beta1), beta2_(beta2), eps_(eps) {
  HKT_CHECK(beta1 >= 0.0 && beta1 < 1.0, "AdamW: beta1 must be in [0, 1), got ", beta1);
  HKT_CHECK(beta2 >= 0.0 && beta2 < 1.0, "AdamW: beta2 must be in [0, 1), got ", beta2);
  HKT_CHECK(std::isfinite(eps) && eps >= 0.0, "AdamW: eps must be finite and >= 0, got ", eps);
}

AdamW::AdamW(std::vector<Tensor> params, double lr, double weight_decay, double beta1, double beta2, double eps)
    : AdamW(std::vector<ParamGroup>{ParamGroup{std::move(params), lr, weight_decay, ""}}, beta1, beta2, eps) {}

std::vector<Optimizer::StateSpec> AdamW::state_spec(const Tensor& p) const {
  return {{"exp_avg", p.shape(), p.dtype(), p.device()},
          {"exp_avg_sq", p.shape(), p.dtype(), p.device()},
          {"step", {}, DType::Int64, Device::cpu()}};
}

void AdamW::update(size_t i, Tensor& param, const Tensor& grad, double lr, double weight_decay) {
  NamedTensors& s = state_[i];
  const bool first = s.empty();
  NamedTensors fresh;
  if (first)
    fresh = {{"exp_avg", zeros_like(param)}, {"exp_avg_sq", zeros_like(param)},
             {"step", scalar_tensor(0.0, DType::Int64)}};
  NamedTensors& st = first ? fresh : s;
  Tensor& count = st[2].second;
  const int64_t t = *count.data<int64_t>() + 1;
  pending_.push_back({param, grad, st[0].second, st[1].second, lr, weight_decay, t});
  pending_counts_.push_back(count);
  if (first) s = std::move(fresh);
}

void AdamW::finish_step() {
  std::vector<AdamWItem> items;
  std::vector<Tensor> counts;
  items.swap(pending_);
  counts.swap(pending_counts_);
  adamw_update_multi_(items, beta1_, beta2_, eps_);  // checks all, then writes all
  for (Tensor& count : counts) {
    *count.data<int64_t>() += 1;
    count.storage()->bump_version();
  }
}

// --- clipping ---------------------------------------------------------------

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm) {
  profiler::Scope timed("clip_grad_norm_");
  HKT_CHECK(std::isfinite(max_norm) && max_norm > 0.0, "clip_grad_norm_: max_norm must be positive and finite, got ",
            max_norm);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  std::set<const TensorImpl*> seen;  // a parameter listed twice counts once
  for (size_t i = 0; i < params.size(); ++i) {
    HKT_CHECK(params[i].defined(), "clip_grad_norm_: parameter ", i, " is undefined");
    if (!seen.insert(params[i].unsafe_impl()).second) continue;
    Tensor g = params[i].grad();
    if (g.defined()) grads.push_back(g);
  }
  // All the squared norms at once (on a GPU one wait for all, not one per
  // parameter), added in the parameters' order.
  double total = 0.0;
  for (double s : sum_of_squares_multi(grads)) total += s;
  const double norm = std::sqrt(total);
  if (!std::isfinite(norm) || norm <= max_norm) return norm;
  const double f = max_norm / (norm + 1e-6);
  std::vector<Tensor> contiguous_grads;
  for (Tensor& g : grads) {
    if (g.is_contiguous()) {
      contiguous_grads.push_back(g);
    } else {
      copy_(g, g * f);
    }
  }
  scale_multi_(contiguous_grads, f);
  return norm;
}

}  // namespace hkt::nn
