// The library's fused CUDA attention kernels (kernels/cuda/attention.cu, the
// GPU's own source) run in the CPU emulator (kernels/cuda_emu) against the CPU
// fused kernel: outputs and every gradient, on small random shapes with T not
// a power of two, L = 1..4, both masks, key padding, float32 (3xTF32
// tensor-core products, emulated) and float64. Runs in every build, with or
// without a GPU, so a change to the CUDA kernels is checked before a GPU
// session. The GPU itself is checked by tests/test_cuda_attention.cpp; the
// lab's variants by tools/cuda-lab/tests.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/cuda_emu/emulated.hpp"
#include "kernels/cuda/attention.hpp"
#include "testing/emulated_attention.hpp"

using namespace hkt;
using namespace hkt::test;

TEST_CASE("emulated cuda attention: fused kernels vs the CPU fused kernel, float32") {
  // Small shapes (the emulator runs every CUDA thread as a fiber): one and
  // several 64-row tiles, T not a power of two, a head dim that is not a
  // multiple of 16 or of 4 (no float4 loads), the levels' small grids.
  const std::vector<Case> cases = {
      {2, 1, 1, 16, 1, false, false},  {1, 2, 7, 16, 2, true, false},   {3, 1, 63, 32, 3, false, true},
      {3, 1, 100, 24, 4, true, true},  {1, 1, 130, 64, 3, false, false}, {1, 1, 129, 64, 1, true, false},
      {2, 1, 70, 18, 2, false, true},  {1, 1, 97, 100, 2, true, false},
      {1, 1, 127, 32, 2, false, false},  // the last key tile ends one past T: it keeps its mask tests
  };
  compare_cases(cases, 101, "default kernels");
}

TEST_CASE("emulated cuda attention: every backward writes only the gradients asked for, the same bits") {
  // The default kernels (testing/emulated_attention.hpp; the lab's variants: tools/cuda-lab/tests).
  check_gradient_subsets({"default"});
}

TEST_CASE("emulated cuda attention: random shapes, every kernel variant") {
  // Random (T, dh, L, masks) drawn with a fixed seed, under the default
  // kernels (the lab's variants: tools/cuda-lab/tests).
  compare_random_shapes(kAsanCases ? 2 : 6, {});
}

TEST_CASE("emulated cuda attention: a switch or the tuner asking for the lab, in a program without it, is an error") {
  // The variants and the autotuner are tools/cuda-lab's: this program (the library's
  // kernels alone) has not installed them, so each variable that asks for them says so.
  const Inputs in = make_inputs(1, 2, 40, 16, 2, false, 7);
  const char* cases[][3] = {{"HKT_CUDA_ATTN_FWD", "mma", "HKT_CUDA_ATTN_FWD=mma names a kernel of tools/cuda-lab"},
                            {"HKT_CUDA_ATTN_BWD", "fused", "HKT_CUDA_ATTN_BWD=fused names a kernel of tools/cuda-lab"},
                            {"HKT_CUDA_ATTN_BWD_ACC", "regs", "HKT_CUDA_ATTN_BWD_ACC=regs names a kernel of tools/cuda-lab"},
                            {"HKT_CUDA_ATTN_AUTOTUNE", "1", "HKT_CUDA_ATTN_AUTOTUNE=1 asks for the autotuner of tools/cuda-lab"}};
  for (const auto& c : cases) {
    setenv(c[0], c[1], 1);
    CHECK_THROWS_WITH_AS(run_emulated(in, DType::Float32, false, 0.25), doctest::Contains(c[2]), Error);
    unsetenv(c[0]);
  }
  // Off is off: "0" and an empty value run the general kernels.
  const auto ref = run_emulated(in, DType::Float32, false, 0.25);
  for (const char* off : {"0", ""}) {
    setenv("HKT_CUDA_ATTN_AUTOTUNE", off, 1);
    CHECK(same_bits(run_emulated(in, DType::Float32, false, 0.25), ref));
    unsetenv("HKT_CUDA_ATTN_AUTOTUNE");
  }
}

TEST_CASE("emulated cuda attention: float64 matches the CPU to 1e-10") {
  const Inputs in = make_inputs(3, 1, 45, 16, 3, true, 5);
  for (bool causal : {false, true}) {
    const auto emu = run_emulated(in, DType::Float64, causal, 0.25);
    const auto cpu = hkt::test::run(in, Device::cpu(), DType::Float64, causal, 0.25, false);
    check_all(emu, cpu, std::string("float64") + (causal ? " causal" : ""), 1e-10);
  }
}

TEST_CASE("emulated cuda attention: the bits do not depend on the order threads and blocks run in") {
  const Inputs in = make_inputs(3, 1, 100, 24, 3, true, 9);
  for (bool causal : {false, true})
    CHECK_MESSAGE(order_independent(in, causal, 0.2), (causal ? "causal" : "bidirectional"));
}

TEST_CASE("emulated cuda attention: shapes the kernels cannot take are refused, saying why") {
  // A head dim above the kernel's 128 is refused on the host, before any launch.
  const Inputs in = make_inputs(1, 1, 8, 16, 1, false, 3);
  std::vector<const void*> q{in.q[0].raw_data()}, k{in.k[0].raw_data()};
  const Tensor o = zeros({1, 1, 8, 16}), lse = zeros({1, 1, 8});
  const cuda::AttnShape big{1, 1, 8, 200, 1, false, 1.0};
  CHECK_THROWS_WITH_AS(cuda::attention_forward<float>(big, q, k, in.v.raw_data(), in.lam.raw_data(), nullptr,
                                                      o.raw_data(), lse.raw_data()),
                       doctest::Contains("head dims up to 128"), Error);
  // L = 7 needs 64-row tiles, whose backward does not fit in shared memory at dh = 100.
  const Inputs in7 = make_inputs(1, 1, 70, 100, 7, false, 4);
  CHECK_THROWS_WITH_AS(run_emulated(in7, DType::Float32, false, 0.1),
                       doctest::Contains("no CUDA tile fits: dh = 100, L = 7, 32-bit floats need more shared memory "
                                         "than the device's 232448 bytes per block (use a smaller head dim, at most "
                                         "6 levels (32-row tiles), or the cpu)"),
                       Error);
}
