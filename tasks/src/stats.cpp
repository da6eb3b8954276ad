#include "hkt/tasks/stats.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "hkt/core/error.hpp"
#include "hkt/core/random.hpp"

namespace hkt::tasks {

double t975(int64_t df) {
  HKT_CHECK(df >= 1, "t975: degrees of freedom must be >= 1, got ", df);
  static constexpr std::array<double, 30> kSmall = {
      12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
      2.2010,  2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
      2.0796,  2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
  if (df <= 30) return kSmall[static_cast<size_t>(df - 1)];
  // Beyond the table: linear in 1/df between the tabulated points (the error is below 1e-3).
  static constexpr std::array<std::pair<double, double>, 5> kLarge = {
      {{30, 2.0423}, {40, 2.0211}, {60, 2.0003}, {120, 1.9799}, {1e300, 1.95996}}};
  const double d = static_cast<double>(df);
  for (size_t i = 1; i < kLarge.size(); ++i) {
    if (d <= kLarge[i].first) {
      const double x0 = 1 / kLarge[i - 1].first, x1 = 1 / kLarge[i].first, x = 1 / d;
      return kLarge[i - 1].second + (kLarge[i].second - kLarge[i - 1].second) * (x - x0) / (x1 - x0);
    }
  }
  return 1.95996;
}

Interval t_interval(const std::vector<double>& x) {
  Interval r;
  if (x.size() < 2) return r;
  const double n = static_cast<double>(x.size());
  double mean = 0;
  for (double v : x) mean += v;
  mean /= n;
  double ss = 0;
  for (double v : x) ss += (v - mean) * (v - mean);
  const double half = t975(static_cast<int64_t>(x.size()) - 1) * std::sqrt(ss / (n - 1)) / std::sqrt(n);
  r.lo = mean - half;
  r.hi = mean + half;
  r.defined = true;
  return r;
}

Interval wilson(int64_t correct, int64_t n) {
  Interval r;
  if (n <= 0 || correct < 0 || correct > n) return r;
  const double z = 1.959964, nn = static_cast<double>(n), p = static_cast<double>(correct) / nn;
  const double den = 1 + z * z / nn, centre = (p + z * z / (2 * nn)) / den;
  const double half = z * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / den;
  r.lo = centre - half;
  r.hi = centre + half;
  r.defined = true;
  return r;
}

Interval paired_bootstrap(const std::vector<std::pair<std::vector<uint8_t>, std::vector<uint8_t>>>& pairs,
                          int64_t resamples, uint64_t seed) {
  Interval r;
  if (pairs.empty() || resamples < 2) return r;
  const size_t n = pairs.front().first.size();
  for (const auto& [a, b] : pairs)
    HKT_CHECK(a.size() == n && b.size() == n && n > 0, "paired_bootstrap: every pair needs the same number (> 0) of "
              "examples; got ", a.size(), " and ", b.size(), " against ", n);
  // d[k][i] = a[k][i] - b[k][i] in {-1, 0, 1}; a resample's statistic is the mean over
  // pairs of the mean over drawn examples.
  std::vector<double> stat(static_cast<size_t>(resamples));
  std::vector<int32_t> diff(n, 0);
  for (const auto& [a, b] : pairs)
    for (size_t i = 0; i < n; ++i) diff[i] += static_cast<int32_t>(a[i]) - static_cast<int32_t>(b[i]);
  const double scale = 1.0 / (static_cast<double>(n) * static_cast<double>(pairs.size()));
  for (int64_t s = 0; s < resamples; ++s) {
    int64_t total = 0;
    for (size_t i = 0; i < n; i += 4) {
      const auto u = philox4x32(static_cast<uint64_t>(i), static_cast<uint64_t>(s), seed);
      for (size_t j = 0; j < 4 && i + j < n; ++j)
        total += diff[static_cast<size_t>((static_cast<uint64_t>(u[j]) * n) >> 32)];
    }
    stat[static_cast<size_t>(s)] = static_cast<double>(total) * scale;
  }
  std::sort(stat.begin(), stat.end());
  const auto at = [&](double q) {
    const auto k = static_cast<int64_t>(std::floor(q * static_cast<double>(resamples - 1) + 0.5));
    return stat[static_cast<size_t>(std::clamp<int64_t>(k, 0, resamples - 1))];
  };
  r.lo = at(0.025);
  r.hi = at(0.975);
  r.defined = true;
  return r;
}

}  // namespace hkt::tasks
