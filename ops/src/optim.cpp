// In-place optimizer updates: argument checks here, loops in kernels/cpu/optim.cpp.
#include "hkt/ops/optim.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "hkt/core/grad_mode.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/kernels/registry.hpp"

namespace hkt {
namespace {

// Tensors that one multi-tensor kernel call takes: same device, same dtype.
std::tuple<int, int, int> group_key(const Tensor& t) {
  return {static_cast<int>(t.device().type), t.device().index, static_cast<int>(t.dtype())};
}

void check_param(const char* op, const Tensor& param) {
  HKT_CHECK(param.defined(), op, ": param is undefined");
  HKT_CHECK(is_floating(param.dtype()), op, ": param must be float32 or float64, got ", meta_str(param.meta()));
  HKT_CHECK(param.is_contiguous(), op, ": param (", meta_str(param.meta()), ") must be contiguous");
}

// `t` (called `what`) must match the parameter exactly and be contiguous.
void check_like(const char* op, const char* what, const Tensor& t, const Tensor& param) {
  HKT_CHECK(t.defined(), op, ": ", what, " is undefined");
  HKT_CHECK(t.meta() == param.meta(), op, ": ", what, " is ", meta_str(t.meta()), " but param is ",
            meta_str(param.meta()));
  HKT_CHECK(t.is_contiguous(), op, ": ", what, " (", meta_str(t.meta()), ") must be contiguous");
}

// Two tensors written by the same update must not share memory with each other.
void check_distinct(const char* op, const char* a_name, const Tensor& a, const char* b_name, const Tensor& b) {
  HKT_CHECK(a.storage() != b.storage(), op, ": ", a_name, " and ", b_name, " share storage");
}

void check_finite(const char* op, const char* what, double v) {
  HKT_CHECK(std::isfinite(v), op, ": ", what, " must be finite, got ", v);
}

}  // namespace

void sgd_update_(Tensor& param, const Tensor& grad, Tensor& momentum_buf, double lr, double momentum,
                 double dampening, double weight_decay, bool nesterov, bool first_step) {
  constexpr const char* op = "sgd_update_";
  NoGradGuard no_grad;
  check_param(op, param);
  check_like(op, "grad", grad, param);
  check_finite(op, "lr", lr);
  check_finite(op, "momentum", momentum);
  check_finite(op, "dampening", dampening);
  check_finite(op, "weight_decay", weight_decay);
  HKT_CHECK(!nesterov || momentum != 0.0, op, ": nesterov needs a non-zero momentum");
  const bool use_buf = momentum != 0.0;
  if (use_buf) {
    check_like(op, "momentum_buf", momentum_buf, param);
    check_distinct(op, "param", param, "momentum_buf", momentum_buf);
  }
  kernels::tables().sgd.get(param.device(), param.dtype())(param.raw_data(), grad.raw_data(),
                                                  use_buf ? momentum_buf.raw_data() : nullptr, param.numel(), lr,
                                                  momentum, dampening, weight_decay, nesterov, first_step);
  param.storage()->bump_version();
  if (use_buf) momentum_buf.storage()->bump_version();
}

namespace {
// The per-step scalars of kernels/cpu/optim.cpp's adamw_update, after the checks.
struct AdamWScalars {
  double decay, step_size, bc2_sqrt;
};
AdamWScalars adamw_scalars(const char* op, const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                           const Tensor& exp_avg_sq, double lr, double beta1, double beta2, double eps,
                           double weight_decay, int64_t step) {
  check_param(op, param);
  check_like(op, "grad", grad, param);
  check_like(op, "exp_avg", exp_avg, param);
  check_like(op, "exp_avg_sq", exp_avg_sq, param);
  check_distinct(op, "param", param, "exp_avg", exp_avg);
  check_distinct(op, "param", param, "exp_avg_sq", exp_avg_sq);
  check_distinct(op, "exp_avg", exp_avg, "exp_avg_sq", exp_avg_sq);
  check_finite(op, "lr", lr);
  check_finite(op, "eps", eps);
  check_finite(op, "weight_decay", weight_decay);
  HKT_CHECK(step >= 1, op, ": step must be >= 1 (the 1-based update count), got ", step);
  HKT_CHECK(beta1 >= 0.0 && beta1 < 1.0, op, ": beta1 must be in [0, 1), got ", beta1);
  HKT_CHECK(beta2 >= 0.0 && beta2 < 1.0, op, ": beta2 must be in [0, 1), got ", beta2);
  const double t = static_cast<double>(step);
  return {1.0 - lr * weight_decay, lr / (1.0 - std::pow(beta1, t)), std::sqrt(1.0 - std::pow(beta2, t))};
}
}  // namespace

void adamw_update_multi_(const std::vector<AdamWItem>& items, double beta1, double beta2, double eps) {
  constexpr const char* op = "adamw_update_multi_";
  NoGradGuard no_grad;
  std::vector<AdamWScalars> sc;
  for (const AdamWItem& it : items)
    sc.push_back(adamw_scalars(op, it.param, it.grad, it.exp_avg, it.exp_avg_sq, it.lr, beta1, beta2, eps,
                               it.weight_decay, it.step));
  // One kernel call per (device, dtype) group, over all of its parameters.
  std::map<std::tuple<int, int, int>, std::vector<opt::AdamWTensor>> groups;
  std::map<std::tuple<int, int, int>, size_t> first;
  for (size_t i = 0; i < items.size(); ++i) {
    const AdamWItem& it = items[i];
    const auto key = group_key(it.param);
    first.emplace(key, i);
    groups[key].push_back({it.param.raw_data(), it.grad.raw_data(), it.exp_avg.raw_data(), it.exp_avg_sq.raw_data(),
                           it.param.numel(), sc[i].decay, sc[i].step_size, sc[i].bc2_sqrt});
  }
  for (const auto& [key, ts] : groups) {
    const Tensor& p = items[first.at(key)].param;
    kernels::tables().adamw_multi.get(p.device(), p.dtype())(ts, beta1, beta2, eps);
  }
  for (const AdamWItem& it : items) {
    it.param.storage()->bump_version();
    it.exp_avg.storage()->bump_version();
    it.exp_avg_sq.storage()->bump_version();
  }
}

void adamw_update_(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, double lr, double beta1,
                   double beta2, double eps, double weight_decay, int64_t step) {
  NoGradGuard no_grad;
  const AdamWScalars sc = adamw_scalars("adamw_update_", param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps,
                                        weight_decay, step);
  kernels::tables().adamw.get(param.device(), param.dtype())(param.raw_data(), grad.raw_data(), exp_avg.raw_data(),
                                                    exp_avg_sq.raw_data(), param.numel(), beta1, beta2, eps, sc.decay,
                                                    sc.step_size, sc.bc2_sqrt);
  param.storage()->bump_version();
  exp_avg.storage()->bump_version();
  exp_avg_sq.storage()->bump_version();
}

double sum_of_squares(const Tensor& t) {
  HKT_CHECK(t.defined(), "sum_of_squares: tensor is undefined");
  HKT_CHECK(is_floating(t.dtype()), "sum_of_squares: expected a float32 or float64 tensor, got ",
            meta_str(t.meta()));
  NoGradGuard no_grad;
  const Tensor c = contiguous(t.detach());
  return kernels::tables().sum_squares.get(c.device(), c.dtype())(c.raw_data(), c.numel());
}

std::vector<double> sum_of_squares_multi(const std::vector<Tensor>& ts) {
  NoGradGuard no_grad;
  std::vector<Tensor> c(ts.size());
  // The tensors by (device, dtype), in order: one kernel call per group.
  std::map<std::tuple<int, int, int>, std::vector<size_t>> groups;
  for (size_t i = 0; i < ts.size(); ++i) {
    HKT_CHECK(ts[i].defined(), "sum_of_squares_multi: tensor ", i, " is undefined");
    HKT_CHECK(is_floating(ts[i].dtype()), "sum_of_squares_multi: tensor ", i,
              " must be float32 or float64, got ", meta_str(ts[i].meta()));
    c[i] = contiguous(ts[i].detach());
    groups[group_key(c[i])].push_back(i);
  }
  std::vector<double> out(ts.size());
  for (const auto& [key, idx] : groups) {
    std::vector<opt::MultiTensor> m;
    for (size_t i : idx) m.push_back({c[i].raw_data(), c[i].numel()});
    std::vector<double> sums(idx.size());
    kernels::tables().sum_squares_multi.get(c[idx[0]].device(), c[idx[0]].dtype())(m, sums.data());
    for (size_t j = 0; j < idx.size(); ++j) out[idx[j]] = sums[j];
  }
  return out;
}

namespace {
void check_scale(const char* op, const Tensor& t, const std::string& which) {
  HKT_CHECK(t.defined(), op, ": tensor", which, " is undefined");
  HKT_CHECK(is_floating(t.dtype()), op, ": expected a float32 or float64 tensor", which, ", got ", meta_str(t.meta()));
  HKT_CHECK(t.is_contiguous(), op, ": tensor", which, " (", meta_str(t.meta()), ") must be contiguous");
  HKT_CHECK(!(t.requires_grad() && GradMode::is_enabled()), op, ": in-place write to a tensor", which,
            " that requires grad; do it under NoGradGuard");
}
}  // namespace

void scale_(Tensor& t, double factor) {
  check_scale("scale_", t, "");
  kernels::tables().scale.get(t.device(), t.dtype())(t.raw_data(), t.numel(), factor);
  t.storage()->bump_version();
}

void scale_multi_(const std::vector<Tensor>& ts, double factor) {
  std::map<std::tuple<int, int, int>, std::vector<size_t>> groups;
  for (size_t i = 0; i < ts.size(); ++i) {
    check_scale("scale_multi_", ts[i], str_cat(" ", i));
    groups[group_key(ts[i])].push_back(i);
  }
  // No element may be scaled twice: the tensors' memory must not overlap.
  std::vector<std::tuple<uintptr_t, uintptr_t, size_t>> spans;  // [begin, end), index
  for (size_t i = 0; i < ts.size(); ++i) {
    const auto b = reinterpret_cast<uintptr_t>(ts[i].raw_data());
    const auto bytes = static_cast<uintptr_t>(ts[i].numel()) * dtype_size(ts[i].dtype());
    if (bytes > 0) spans.emplace_back(b, b + bytes, i);
  }
  std::sort(spans.begin(), spans.end());
  for (size_t k = 1; k < spans.size(); ++k)
    HKT_CHECK(std::get<0>(spans[k]) >= std::get<1>(spans[k - 1]), "scale_multi_: tensors ",
              std::min(std::get<2>(spans[k - 1]), std::get<2>(spans[k])), " and ",
              std::max(std::get<2>(spans[k - 1]), std::get<2>(spans[k])), " overlap in memory (an element would be scaled twice)");
  for (const auto& [key, idx] : groups) {
    std::vector<opt::MultiTensor> m;
    for (size_t i : idx) m.push_back({ts[i].raw_data(), ts[i].numel()});
    kernels::tables().scale_multi.get(ts[idx[0]].device(), ts[idx[0]].dtype())(m, factor);
  }
  for (const Tensor& t : ts) t.storage()->bump_version();
}

}  // namespace hkt
