// main() of the GPU suites (test_cuda_*.cpp), and the skip macro for each
// case. Include from exactly one file per executable, instead of linking
// hkt_test_main.
//
// Without a usable GPU (no CUDA backend in this build, no driver, no device)
// every case prints "SKIPPED: <reason>" and returns; the executable then exits
// with 77, which CTest (SKIP_RETURN_CODE, tests/CMakeLists.txt) shows as
// "Skipped": visible, and not a failure.
#pragma once
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "hkt/tasks.hpp"

#define HKT_REQUIRE_GPU()                                                              \
  do {                                                                                 \
    if (!::hkt::cuda_is_available()) {                                                 \
      MESSAGE("SKIPPED (no GPU): " << ::hkt::cuda_unavailable_reason());               \
      return;                                                                          \
    }                                                                                  \
  } while (0)

int main(int argc, char** argv) {
  doctest::Context ctx(argc, argv);
  const bool gpu = hkt::cuda_is_available();
  if (!gpu) std::printf("CUDA tests SKIPPED: %s\n", hkt::cuda_unavailable_reason().c_str());
  const int rc = ctx.run();
  if (ctx.shouldExit() || rc != 0) return rc;
  return gpu ? 0 : 77;
}
