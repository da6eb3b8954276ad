// Helpers shared by the test suites.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "hkt/tasks.hpp"

namespace hkt::test {

// A float64 leaf with values in a comfortable range for finite differences.
inline Tensor leaf(const Shape& s, double lo = -1.5, double hi = 1.5, uint64_t seed = 7) {
  Generator g(seed);
  return uniform(s, lo, hi, {DType::Float64}, &g).set_requires_grad(true);
}

// A non-contiguous float64 leaf of shape s: the transpose of a contiguous tensor.
inline Tensor transposed_leaf(const Shape& s, double lo = -1.5, double hi = 1.5, uint64_t seed = 9) {
  Shape r(s.rbegin(), s.rend());
  Generator g(seed);
  Tensor base = uniform(r, lo, hi, {DType::Float64}, &g);
  std::vector<int64_t> p;
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) p.push_back(d);
  Tensor t = permute(base, p).detach();
  REQUIRE(!t.is_contiguous());
  return t.set_requires_grad(true);
}

// A [B, T] boolean mask of right padding: row b valid at positions t < lengths[b].
inline Tensor right_padding(const std::vector<int64_t>& lengths, int64_t T) {
  std::vector<int64_t> v;
  for (int64_t n : lengths)
    for (int64_t t = 0; t < T; ++t) v.push_back(t < n);
  return gt(from_vector(v, {static_cast<int64_t>(lengths.size()), T}), 0.0);
}

// Expects `f` to throw hkt::Error whose message contains `needle`.
template <class F>
void check_error(F&& f, const std::string& needle) {
  try {
    f();
    FAIL("expected hkt::Error containing '" << needle << "'");
  } catch (const Error& e) {
    INFO("message: " << e.what());
    CHECK(std::string(e.what()).find(needle) != std::string::npos);
  }
}

// The message of the hkt::Error that f throws ("" if it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline std::vector<double> vals(const Tensor& t) {
  return to_dtype(to_device(t, Device::cpu()), DType::Float64).to_vector<double>();
}

// Expects got == want elementwise within tol (1 + |want|); infinities must match exactly.
inline void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-12) {
  REQUIRE(got.size() == want.size());
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool ok = std::isinf(want[i]) ? got[i] == want[i]
                                        : std::abs(got[i] - want[i]) <= tol * (1.0 + std::abs(want[i]));
    if (!ok && bad++ == 0) first = i;
  }
  INFO(bad << " of " << got.size() << " elements differ; first: element " << first << ", got "
           << (bad ? got[first] : 0.0) << ", want " << (bad ? want[first] : 0.0));
  CHECK(bad == 0);
}

// Expects tensors of one shape and dtype (on any devices) equal within atol + rtol |want|;
// NaNs and infinities must match. `what` names the comparison in the failure.
inline void check_close(const Tensor& got, const Tensor& want, const std::string& what, double rtol = 1e-4,
                        double atol = 1e-5) {
  REQUIRE(got.defined());
  REQUIRE(want.defined());
  CHECK(got.shape() == want.shape());
  CHECK(got.dtype() == want.dtype());
  const std::vector<double> g = vals(got), w = vals(want);
  REQUIRE(g.size() == w.size());
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const bool same_nan = std::isnan(g[i]) && std::isnan(w[i]);
    const bool same_inf = std::isinf(g[i]) && g[i] == w[i];
    if (!same_nan && !same_inf && !(std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i]))) {
      if (bad++ == 0) first = i;
    }
  }
  INFO(what << ": " << bad << " of " << g.size() << " elements differ; first at " << first << ": got "
            << (g.empty() ? 0.0 : g[first]) << ", want " << (w.empty() ? 0.0 : w[first]));
  CHECK(bad == 0);
}

}  // namespace hkt::test
