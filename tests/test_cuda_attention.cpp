// The fused CUDA attention kernel (kernels/cuda/attention.cu) against the CPU
// fused kernel and the composite reference (plain ops, T x T, float64;
// tests/helpers/composite_attention.hpp), on random shapes: T not a power of
// two (1 .. 1000), L = 1..4, causal or not, with and without key padding;
// outputs and every gradient.
#include "cuda_test_main.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "testing/attention_cases.hpp"

using namespace hkt;
using hkt::test::check_all;
using hkt::test::Inputs;
using hkt::test::make_inputs;
using hkt::test::run;

namespace {

// HKT_TEST_MAX_T caps the sequence lengths of the random-shape cases: the
// emulated backend (tests/cuda_emu) runs this suite with 300, since its cost
// grows with T^2 and T = 300 already spans five key tiles. Unset on a GPU.
// `lower`: a smaller cap for a case that runs many kernels per shape.
int64_t test_T(int64_t T, int64_t lower = 0) {
  static const int64_t env_cap = [] {
    const char* s = std::getenv("HKT_TEST_MAX_T");
    return s && *s ? std::atoll(s) : int64_t{0};
  }();
  const int64_t cap = env_cap > 0 && lower > 0 ? std::min(env_cap, lower) : env_cap;
  if (cap <= 0 || T <= cap) return T;
  MESSAGE("HKT_TEST_MAX_T=" << cap << ": the T = " << T << " case runs at T = " << cap);
  return cap;
}

}  // namespace

TEST_CASE("cuda attention: fused kernel vs CPU fused and composite, random shapes") {
  HKT_REQUIRE_GPU();
  struct Case {
    int64_t B, H, T, dh, L;
  };
  const std::vector<Case> cases = {{2, 2, 1, 16, 1},  {3, 2, 7, 16, 2},   {3, 2, 63, 32, 3}, {2, 3, 100, 24, 4},
                                   {3, 1, 257, 32, 4}, {1, 2, 1000, 64, 3}, {2, 2, 129, 100, 2}};
  uint64_t seed = 11;
  for (Case c : cases)
    for (bool causal : {false, true})
      for (bool padded : {false, true}) {
        c.T = test_T(c.T);
        const Inputs in = make_inputs(c.B, c.H, c.T, c.dh, c.L, padded, seed++);
        const double scale = 1.0 / std::sqrt(static_cast<double>(c.dh));
        const std::string what = "B " + std::to_string(c.B) + " H " + std::to_string(c.H) + " T " +
                                 std::to_string(c.T) + " dh " + std::to_string(c.dh) + " L " + std::to_string(c.L) +
                                 (causal ? " causal" : "") + (padded ? " padded" : "");
        const auto gpu = run(in, Device::cuda(), DType::Float32, causal, scale, false);
        const auto cpu = run(in, Device::cpu(), DType::Float32, causal, scale, false);
        check_all(gpu, cpu, what + ": cuda fused vs cpu fused", 1e-4);
        if (c.T <= 257) {
          const auto ref = run(in, Device::cpu(), DType::Float64, causal, scale, true);
          check_all(gpu, ref, what + ": cuda fused vs float64 composite", 1e-4);
        }
      }
}

TEST_CASE("cuda attention: the lab's kernel variants need the lab") {
  // The variants are tools/cuda-lab's: without install_lab_variants() a knob
  // naming one is an error saying so (the lab's own tests check them with the
  // lab installed, in the emulator; hkt-bench-gpu --probe on a GPU).
  HKT_REQUIRE_GPU();
  const Inputs in = make_inputs(1, 2, 40, 16, 2, false, 7);
  for (const char* kv : {"HKT_CUDA_ATTN_FWD=mma", "HKT_CUDA_ATTN_BWD=fused", "HKT_CUDA_ATTN_BWD_ACC=regs"}) {
    const std::string name = std::string(kv).substr(0, std::string(kv).find('='));
    setenv(name.c_str(), std::string(kv).substr(name.size() + 1).c_str(), 1);
    CHECK_THROWS_WITH_AS(run(in, Device::cuda(), DType::Float32, false, 0.25, false),
                         doctest::Contains((std::string(kv) + " names a kernel of tools/cuda-lab").c_str()), Error);
    unsetenv(name.c_str());
  }
}

TEST_CASE("cuda attention: the composite reference runs on the GPU too; float64 fused") {
  HKT_REQUIRE_GPU();
  const Inputs in = make_inputs(3, 2, 70, 16, 3, true, 5);
  const auto g = run(in, Device::cuda(), DType::Float64, true, 0.25, true);
  const auto ref = run(in, Device::cpu(), DType::Float64, true, 0.25, true);
  check_all(g, ref, "composite cuda vs cpu (float64)", 1e-10);
  const auto f = run(in, Device::cuda(), DType::Float64, true, 0.25, false);
  check_all(f, ref, "fused cuda float64 vs composite", 1e-10);
}

TEST_CASE("cuda attention: MHA (L = 1) through mha_attention") {
  HKT_REQUIRE_GPU();
  Generator g(4);
  const Tensor q = uniform({2, 4, 300, 64}, -1, 1, {}, &g), k = uniform({2, 4, 300, 64}, -1, 1, {}, &g),
               v = uniform({2, 4, 300, 64}, -1, 1, {}, &g);
  for (bool causal : {false, true}) {
    const Tensor a = mha_attention(to_device(q, Device::cuda()), to_device(k, Device::cuda()),
                                   to_device(v, Device::cuda()), Tensor(), causal, 0.125);
    const Tensor b = mha_attention(q, k, v, Tensor(), causal, 0.125);
    check_all({to_dtype(to_device(a, Device::cpu()), DType::Float64)}, {to_dtype(b, DType::Float64)}, "mha", 1e-5);
  }
}

TEST_CASE("cuda attention: the kernels the knobs name (cuda_attention_kernel_knobs)") {
  // What hkt-bench-gpu asks before its autotuned rows: a knob wins over the lab's tuner.
  HKT_REQUIRE_GPU();
  for (const char* v : {"HKT_CUDA_ATTN_FWD", "HKT_CUDA_ATTN_BWD", "HKT_CUDA_ATTN_BWD_ACC"}) unsetenv(v);
  CHECK(cuda_attention_kernel_knobs().empty());
  setenv("HKT_CUDA_ATTN_BWD_ACC", "smem", 1);  // the default: fixes nothing
  CHECK(cuda_attention_kernel_knobs().empty());
  setenv("HKT_CUDA_ATTN_BWD_ACC", "regs", 1);
  CHECK(cuda_attention_kernel_knobs() == "backward general-regs");
  setenv("HKT_CUDA_ATTN_FWD", "mma-lean", 1);
  CHECK(cuda_attention_kernel_knobs() == "forward mma-lean, backward general-regs");
  unsetenv("HKT_CUDA_ATTN_BWD_ACC");
  CHECK(cuda_attention_kernel_knobs() == "forward mma-lean");
  setenv("HKT_CUDA_ATTN_FWD", "flash", 1);
  CHECK_THROWS_WITH_AS(cuda_attention_kernel_knobs(), doctest::Contains("HKT_CUDA_ATTN_FWD=flash names no kernel"),
                       Error);
  unsetenv("HKT_CUDA_ATTN_FWD");
}
