// Helpers shared by the test suites.
#pragma once
#include <string>

#include <doctest/doctest.h>

#include "hkt/hkt.hpp"

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

inline std::vector<double> vals(const Tensor& t) { return to_dtype(t, DType::Float64).to_vector<double>(); }

}  // namespace hkt::test
