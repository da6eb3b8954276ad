// The composite HKT attention reference the fused kernels are tested against:
// hkt::nn::composite_attention (hkt/models/composite_attention.hpp), under the
// suites' namespace.
#pragma once
#include "hkt/models/composite_attention.hpp"

namespace hkt::test {
using hkt::nn::composite_attention;
}  // namespace hkt::test
