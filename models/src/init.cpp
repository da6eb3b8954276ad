#include "hkt/models/init.hpp"

#include <cmath>

#include "hkt/core/grad_mode.hpp"
#include "hkt/ops/factory.hpp"

namespace hkt::nn::init {

std::pair<int64_t, int64_t> fans(const Tensor& t) {
  HKT_CHECK(t.dim() >= 1, "init: cannot compute fans of a 0-d tensor");
  if (t.dim() == 1) return {t.size(0), t.size(0)};
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

void constant_(Tensor& t, double value) {
  NoGradGuard ng;
  fill_(t, value);
}
void zeros_(Tensor& t) { constant_(t, 0.0); }
void ones_(Tensor& t) { constant_(t, 1.0); }

void normal_(Tensor& t, double mean, double std, Generator* gen) {
  NoGradGuard ng;
  copy_(t, normal(t.shape(), mean, std, {t.dtype(), t.device()}, gen));
}

void uniform_(Tensor& t, double lo, double hi, Generator* gen) {
  NoGradGuard ng;
  copy_(t, uniform(t.shape(), lo, hi, {t.dtype(), t.device()}, gen));
}

void xavier_uniform_(Tensor& t, double gain, Generator* gen) {
  const auto [fi, fo] = fans(t);
  const double b = gain * std::sqrt(6.0 / static_cast<double>(fi + fo));
  uniform_(t, -b, b, gen);
}

void kaiming_uniform_(Tensor& t, double a, Generator* gen) {
  const auto [fi, fo] = fans(t);
  HKT_CHECK(fi > 0, "kaiming_uniform_: fan_in is 0 for shape ", shape_str(t.shape()));
  const double b = std::sqrt(2.0 / (1.0 + a * a)) * std::sqrt(3.0 / static_cast<double>(fi));
  uniform_(t, -b, b, gen);
}

}  // namespace hkt::nn::init
