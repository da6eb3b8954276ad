#include "hkt/ops/gradcheck.hpp"

#include <cmath>

#include "hkt/core/grad_mode.hpp"
#include "hkt/core/random.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/reduce.hpp"

namespace hkt {
namespace {

// sum_k <w_k, out_k> in double on the host.
double project(const std::vector<Tensor>& outs, const std::vector<std::vector<double>>& w) {
  double s = 0;
  for (size_t k = 0; k < outs.size(); ++k) {
    if (!is_floating(outs[k].dtype())) continue;
    const std::vector<double> v = to_dtype(outs[k], DType::Float64).to_vector<double>();
    for (size_t i = 0; i < v.size(); ++i) s += w[k][i] * v[i];
  }
  return s;
}

}  // namespace

void gradcheck(const MultiFn& f, const std::vector<Tensor>& inputs, const GradcheckOptions& opt) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad())
      HKT_CHECK(inputs[i].dtype() == DType::Float64 && inputs[i].device().is_cpu(), "gradcheck: input ", i,
                " is ", meta_str(inputs[i].meta()), "; gradients are checked in float64 on the cpu");
  for (const Tensor& in : inputs)
    if (in.defined() && in.requires_grad()) in.unsafe_impl()->grad.reset();

  // Analytic gradients.
  std::vector<Tensor> outs = f(inputs);
  Generator gen(opt.seed);
  std::vector<std::vector<double>> w;
  Tensor loss;
  for (const Tensor& o : outs) {
    const Tensor wk = randn(o.shape(), {DType::Float64}, &gen);
    w.push_back(wk.to_vector<double>());
    if (!is_floating(o.dtype()) || !o.requires_grad()) continue;
    const Tensor term = sum(mul(to_dtype(o, DType::Float64), wk));
    loss = loss.defined() ? add(loss, term) : term;
  }
  HKT_CHECK(loss.defined(), "gradcheck: no output requires a gradient");
  loss.backward();

  NoGradGuard no_grad;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.defined() || !x.requires_grad()) continue;
    HKT_CHECK(x.grad().defined(), "gradcheck: input ", i, " requires grad but received none");
    HKT_CHECK(x.grad().shape() == x.shape(), "gradcheck: gradient of input ", i, " has shape ",
              shape_str(x.grad().shape()), ", input has ", shape_str(x.shape()));
    const std::vector<double> analytic = x.grad().to_vector<double>();
    double* base = x.data<double>();
    for_each_offset(x.shape(), x.strides(), [&](int64_t j, int64_t off) {
      const double orig = base[off];
      base[off] = orig + opt.eps;
      const double lp = project(f(inputs), w);
      base[off] = orig - opt.eps;
      const double lm = project(f(inputs), w);
      base[off] = orig;
      const double numeric = (lp - lm) / (2 * opt.eps);
      const double a = analytic[static_cast<size_t>(j)];
      HKT_CHECK(std::abs(a - numeric) <= opt.atol + opt.rtol * std::abs(numeric) && std::isfinite(a),
                "gradcheck: input ", i, " (shape ", shape_str(x.shape()), "), element ", j, ": analytic ", a,
                " vs numeric ", numeric, " (diff ", std::abs(a - numeric), ")");
    });
  }
}

void gradcheck(const SingleFn& f, const std::vector<Tensor>& inputs, const GradcheckOptions& opt) {
  gradcheck(MultiFn([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in)}; }), inputs, opt);
}

}  // namespace hkt
