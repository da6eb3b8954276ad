// Interval estimates for the results tables of hkt-experiment: the t interval
// of a mean over seeds, the binomial (Wilson) interval of an accuracy, and the
// paired bootstrap over test examples of a difference in accuracy.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace hkt::tasks {

// The 0.975 quantile of Student's t with df degrees of freedom (df >= 1),
// exact to the 4 digits of the standard tables (df 1..30, then 40, 60, 120 and
// the normal 1.95996, interpolated in 1/df between them).
double t975(int64_t df);

struct Interval {
  double lo = 0, hi = 0;
  bool defined = false;
};

// mean +- t975(n - 1) * sd / sqrt(n) of x (undefined for fewer than 2 values).
Interval t_interval(const std::vector<double>& x);

// The Wilson score interval (95%) of a proportion `correct / n`.
Interval wilson(int64_t correct, int64_t n);

// Per-example correctness of one model (0/1) on the same test examples as
// another. paired_bootstrap resamples the examples with replacement
// (`resamples` draws, a fixed seed, so the table is reproducible) and returns
// the 2.5% and 97.5% percentiles of the mean over pairs of the accuracy
// difference a - b. Every pair (a[k], b[k]) must be of one length (the
// examples of one seed's test set); with several pairs (several seeds on the
// same test set) each resample applies the same drawn examples to every pair,
// so the interval is that of the mean difference over seeds with the test set
// as the only source of variation.
Interval paired_bootstrap(const std::vector<std::pair<std::vector<uint8_t>, std::vector<uint8_t>>>& pairs,
                          int64_t resamples = 10000, uint64_t seed = 20261203);

}  // namespace hkt::tasks
