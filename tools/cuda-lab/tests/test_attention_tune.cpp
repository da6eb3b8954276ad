// The lab's attention autotuner (tools/cuda-lab/attention_tune.cu) with made-up
// candidates, in the CPU emulator of the CUDA kernels: which candidate it
// keeps, why it passes over the others, that it runs nothing once a shape is
// decided, and the knobs' errors. The real kernels under the tuner:
// test_emulated_attention and test_cuda_attention.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cuda_emu/host_memory.hpp"
#include "hkt/core/error.hpp"
#include "tools/cuda-lab/attention_tune.hpp"

using namespace hkt;
using namespace hkt::cuda;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Two outputs, as the forward's O and LSE; the reference writes `want`.
struct Fake {
  std::vector<float> o = std::vector<float>(1000), lse = std::vector<float>(10);
  std::vector<int> runs = std::vector<int>(9, 0);
  std::vector<TuneOutput> outputs() const { return {{o.data(), 1000}, {lse.data(), 10}}; }
  void write(float scale, float lse0) {
    for (size_t i = 0; i < o.size(); ++i) o[i] = scale * (float(i % 37) - 18.0f);
    for (size_t i = 0; i < lse.size(); ++i) lse[i] = float(i) + 0.5f;
    lse[0] = lse0;
  }
  static void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }
  // The candidates: 0 the reference (12 ms); 1 cannot take the call; 2 off by
  // 1e-3 of the largest value; 3 throws; 4 right, 40 ms; 5 right within 1e-6,
  // no wait; 6 a finite value where the reference has +inf; 7 a NaN; 8 right,
  // 25 ms.
  bool run(int i) {
    ++runs[size_t(i)];
    switch (i) {
      case 0: write(1, kInf); sleep_ms(12); return true;
      case 1: return false;
      case 2: write(1, kInf); o[5] += 18e-3f; return true;
      case 3: throw Error("candidate 3: too many resources requested for launch");
      case 4: write(1, kInf); sleep_ms(40); return true;
      case 5: write(1 + 1e-6f, kInf); return true;
      case 6: write(1, 3.0f); return true;
      case 7: write(1, kInf); lse[3] = std::nanf(""); return true;
      default: write(1, kInf); sleep_ms(25); return true;
    }
  }
};

const std::vector<std::string> kNames = {"ref", "n/a", "off", "throws", "slow", "fast", "finite", "nan", "medium"};

TuneKey key(int64_t T) { return TuneKey{false, 2, 4, T, 64, 3, true, false, true, 0}; }

}  // namespace

TEST_CASE("attention autotune: keeps the fastest candidate whose results match the reference") {
  hkt_emu::install_host_allocator();
  clear_attention_autotune();
  Fake f;
  const int chosen = autotune(key(100), kNames, [&](int i) { return f.run(i); }, [&] { return f.outputs(); });
  CHECK(chosen == 5);
  const std::vector<TuneResult> res = attention_autotune_results();
  REQUIRE(res.size() == 1);
  CHECK(res[0].key == key(100));
  CHECK(res[0].chosen == "fast");
  REQUIRE(res[0].trials.size() == kNames.size());
  const auto& t = res[0].trials;
  for (size_t i = 0; i < t.size(); ++i) CHECK(t[i].kernel == kNames[i]);
  CHECK(t[0].outcome == "slower");
  CHECK(t[0].ms >= 12);
  CHECK(t[1].outcome == "not applicable");
  CHECK(t[1].ms == -1);
  CHECK(t[2].outcome == "wrong results");
  CHECK(t[2].rel_error == doctest::Approx(1e-3).epsilon(0.01));
  CHECK(t[2].ms == -1);
  CHECK(t[3].outcome.find("failed: candidate 3: too many resources") == 0);
  CHECK(t[4].outcome == "slower");
  CHECK(t[4].ms >= 40);
  CHECK(t[5].outcome == "chosen");
  CHECK(t[5].rel_error > 0);
  CHECK(t[5].rel_error < 1e-5);
  CHECK(t[5].ms < 12);
  CHECK(t[6].outcome == "wrong results");
  CHECK(std::isinf(t[6].rel_error));
  CHECK(t[7].outcome == "wrong results");
  CHECK(t[8].outcome == "slower");
  // The reference ran once to be kept and twice to be timed; a matching
  // candidate once to be checked and twice to be timed; a wrong one once.
  CHECK(f.runs == std::vector<int>{3, 1, 1, 1, 3, 3, 1, 1, 3});
}

TEST_CASE("attention autotune: a decided shape runs no candidate; another shape is tuned again") {
  hkt_emu::install_host_allocator();
  clear_attention_autotune();
  Fake f;
  REQUIRE(autotune(key(100), kNames, [&](int i) { return f.run(i); }, [&] { return f.outputs(); }) == 5);
  const std::vector<int> after_first = f.runs;
  CHECK(autotune(key(100), kNames, [&](int i) { return f.run(i); }, [&] { return f.outputs(); }) == 5);
  CHECK(f.runs == after_first);
  CHECK(attention_autotune_results().size() == 1);
  // A candidate list in another order: the decision is kept by name.
  const std::vector<std::string> reordered = {"ref", "fast", "slow"};
  CHECK(autotune(key(100), reordered, [&](int i) { return f.run(i); }, [&] { return f.outputs(); }) == 1);
  CHECK(f.runs == after_first);
  autotune(key(101), kNames, [&](int i) { return f.run(i); }, [&] { return f.outputs(); });
  CHECK(attention_autotune_results().size() == 2);
  clear_attention_autotune();
  CHECK(attention_autotune_results().empty());
}

TEST_CASE("attention autotune: a decided shape builds no outputs; a skipped decision is tuned again without it") {
  // Real kernel names stand for candidates 0, 5 and 4 of Fake, so that
  // HKT_CUDA_ATTN_AUTOTUNE_SKIP can name them.
  hkt_emu::install_host_allocator();
  clear_attention_autotune();
  unsetenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP");
  Fake f;
  const std::vector<std::string> names = {"general", "mma", "fused"};
  const int fake[] = {0, 5, 4};
  int built = 0;
  const auto tune = [&] {
    return autotune(key(200), names, [&](int i) { return f.run(fake[i]); }, [&] {
      ++built;
      return f.outputs();
    });
  };
  REQUIRE(tune() == 1);  // mma: Fake's "fast"
  CHECK(built == 1);
  const std::vector<int> after_first = f.runs;
  CHECK(tune() == 1);
  CHECK(built == 1);  // a decided key neither runs a candidate nor builds the outputs
  CHECK(f.runs == after_first);
  setenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP", "mma", 1);
  CHECK(tune() == 0);  // tuned again without mma: general (12 ms) beats fused (Fake's "slow", 40 ms)
  unsetenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP");
  CHECK(built == 2);
  std::vector<TuneResult> res = attention_autotune_results();
  REQUIRE(res.size() == 1);
  CHECK(res[0].chosen == "general");
  REQUIRE(res[0].trials.size() == 2u);  // the skipped kernel is not among the trials
  CHECK(res[0].trials[0].kernel == "general");
  CHECK(res[0].trials[0].outcome == "chosen");
  CHECK(res[0].trials[1].kernel == "fused");
  CHECK(res[0].trials[1].outcome == "slower");
  // The reference is never skipped: a decision for it stands whatever the variable names.
  setenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP", "mma,fused", 1);
  CHECK(tune() == 0);
  unsetenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP");
  CHECK(built == 2);
  clear_attention_autotune();
}

TEST_CASE("attention autotune: a reference that cannot run, or no match, is an error naming the call") {
  hkt_emu::install_host_allocator();
  clear_attention_autotune();
  Fake f;
  CHECK_THROWS_WITH_AS(autotune(key(7), {"n/a", "ref"}, [&](int i) { return f.run(i == 0 ? 1 : 0); }, [&] { return f.outputs(); }),
                       doctest::Contains("the reference kernel n/a cannot take forward B=2 H=4 T=7 dh=64 L=3 causal"),
                       Error);
  CHECK_THROWS_WITH_AS(autotune(key(7), {"throws"}, [&](int) { return f.run(3); }, [&] { return f.outputs(); }),
                       doctest::Contains("the reference kernel throws failed on forward B=2 H=4 T=7"), Error);
  CHECK(attention_autotune_results().empty());
}

TEST_CASE("attention autotune: the mode, from the variable or the API") {
  set_attention_autotune(-1);
  unsetenv("HKT_CUDA_ATTN_AUTOTUNE");
  CHECK(attention_autotune_mode() == 0);
  setenv("HKT_CUDA_ATTN_AUTOTUNE", "1", 1);
  CHECK(attention_autotune_mode() == 1);
  setenv("HKT_CUDA_ATTN_AUTOTUNE", "verbose", 1);
  CHECK(attention_autotune_mode() == 2);
  CHECK(attention_autotune_setting() == -1);
  set_attention_autotune(0);  // the API wins over the variable
  CHECK(attention_autotune_mode() == 0);
  CHECK(attention_autotune_setting() == 0);
  set_attention_autotune(-1);  // back to the variable (what hkt-bench-gpu restores when nothing was set)
  CHECK(attention_autotune_setting() == -1);
  CHECK(attention_autotune_mode() == 2);
  setenv("HKT_CUDA_ATTN_AUTOTUNE", "yes", 1);
  CHECK_THROWS_WITH_AS(attention_autotune_mode(), "hkt_attention: HKT_CUDA_ATTN_AUTOTUNE=yes is not 0, 1 or verbose",
                       Error);
  unsetenv("HKT_CUDA_ATTN_AUTOTUNE");
  CHECK_THROWS_WITH_AS(set_attention_autotune(3), doctest::Contains("mode 3 is not"), Error);
}

TEST_CASE("attention kernel knobs: names, the defaults, and a clear error for an unknown kernel") {
  unsetenv("HKT_CUDA_ATTN_FWD");
  unsetenv("HKT_CUDA_ATTN_BWD");
  unsetenv("HKT_CUDA_ATTN_BWD_ACC");
  bool set = true;
  CHECK(fwd_kernel_knob(&set) == FwdKernel::general);
  CHECK_FALSE(set);
  CHECK(bwd_kernel_knob(&set) == BwdKernel::general);
  CHECK_FALSE(set);
  for (FwdKernel k : {FwdKernel::general, FwdKernel::mma, FwdKernel::mma_async, FwdKernel::mma_lean, FwdKernel::wgmma,
                      FwdKernel::wgmma2}) {
    setenv("HKT_CUDA_ATTN_FWD", kernel_name(k), 1);
    CHECK(fwd_kernel_knob(&set) == k);
    CHECK(set);
  }
  for (BwdKernel k : {BwdKernel::general, BwdKernel::general_regs, BwdKernel::mma, BwdKernel::fused,
                      BwdKernel::fused8, BwdKernel::fused8_async, BwdKernel::wgmma}) {
    setenv("HKT_CUDA_ATTN_BWD", kernel_name(k), 1);
    CHECK(bwd_kernel_knob(&set) == k);
  }
  // HKT_CUDA_ATTN_BWD_ACC=regs: the general backward with register accumulators.
  unsetenv("HKT_CUDA_ATTN_BWD");
  setenv("HKT_CUDA_ATTN_BWD_ACC", "regs", 1);
  CHECK(bwd_kernel_knob(&set) == BwdKernel::general_regs);
  CHECK(set);
  setenv("HKT_CUDA_ATTN_BWD", "fused", 1);  // a named kernel wins
  CHECK(bwd_kernel_knob(&set) == BwdKernel::fused);
  setenv("HKT_CUDA_ATTN_BWD_ACC", "register", 1);
  CHECK_THROWS_WITH_AS(bwd_kernel_knob(&set), doctest::Contains("HKT_CUDA_ATTN_BWD_ACC=register is neither"), Error);
  unsetenv("HKT_CUDA_ATTN_BWD_ACC");
  setenv("HKT_CUDA_ATTN_FWD", "wgmma3", 1);
  CHECK_THROWS_WITH_AS(fwd_kernel_knob(&set),
                       "hkt_attention: HKT_CUDA_ATTN_FWD=wgmma3 names no kernel; it takes one of general, mma, "
                       "mma-async, mma-lean, wgmma, wgmma2 (docs/cuda.md, \"The lab\")",
                       Error);
  setenv("HKT_CUDA_ATTN_BWD", "fused4", 1);
  CHECK_THROWS_WITH_AS(bwd_kernel_knob(&set), doctest::Contains("HKT_CUDA_ATTN_BWD=fused4 names no kernel"), Error);
  unsetenv("HKT_CUDA_ATTN_FWD");
  unsetenv("HKT_CUDA_ATTN_BWD");
}

TEST_CASE("attention autotune: describe names the call") {
  CHECK(describe(key(100)) == "forward B=2 H=4 T=100 dh=64 L=3 causal");
  TuneKey b{true, 1, 8, 1024, 32, 1, false, true, false, 1 | 4 | 8};
  CHECK(describe(b) == "backward B=1 H=8 T=1024 dh=32 L=1 masked unaligned grads=dq,dv,dlambda");
  b.want = 0;
  CHECK(describe(b) == "backward B=1 H=8 T=1024 dh=32 L=1 masked unaligned grads=none");
}

TEST_CASE("attention autotune: HKT_CUDA_ATTN_AUTOTUNE_SKIP keeps kernels out of the trials") {
  unsetenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP");
  CHECK(autotune_may_try("wgmma"));
  setenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP", "wgmma,fused8-async", 1);
  CHECK_FALSE(autotune_may_try("wgmma"));
  CHECK_FALSE(autotune_may_try("fused8-async"));
  CHECK(autotune_may_try("wgmma2"));
  CHECK(autotune_may_try("general"));
  setenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP", "wgmma,general", 1);  // the reference cannot be skipped
  CHECK_THROWS_WITH_AS(autotune_may_try("mma"),
                       "hkt_attention: HKT_CUDA_ATTN_AUTOTUNE_SKIP=wgmma,general: \"general\" is not a kernel the "
                       "tuner may skip (mma, mma-async, mma-lean, wgmma, wgmma2, general-regs, fused, fused8, "
                       "fused8-async)",
                       Error);
  setenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP", "wgmma3", 1);
  CHECK_THROWS_WITH_AS(autotune_may_try("mma"), doctest::Contains("\"wgmma3\" is not a kernel"), Error);
  unsetenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP");
}
