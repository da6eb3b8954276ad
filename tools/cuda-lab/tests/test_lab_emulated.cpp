// The lab's fused-attention kernel variants (tools/cuda-lab, installed into the
// library's kernels of kernels/cuda/attention.cu by install_lab_variants())
// and its autotuner over them, in the CPU emulator (kernels/cuda_emu), against
// the CPU fused kernel: outputs and every gradient, on small random shapes
// with T not a power of two, both masks, key padding, float32 (3xTF32
// tensor-core products, emulated). Runs in every build that builds the tools,
// with or without a GPU, so that the lab does not rot; hkt-bench-gpu --probe
// checks the variants on a GPU. The library's default kernels:
// tests/test_emulated_attention.cpp.
#include <doctest/doctest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "kernels/cuda_emu/emulated.hpp"
#include "kernels/cuda/attention.hpp"
#include "testing/emulated_attention.hpp"
#include "tools/cuda-lab/attention_tune.hpp"
#include "tools/cuda-lab/variants.hpp"

using namespace hkt;
using namespace hkt::test;
using hkt_emu::install_host_allocator;

namespace {

// The lab's kernels and tuner, installed into the (emulated) library's dispatcher at start-up.
[[maybe_unused]] const bool g_lab_installed = (cuda::install_lab_variants(), true);

}  // namespace

TEST_CASE("lab, emulated: the register-resident kernels (HKT_CUDA_ATTN_FWD=mma, HKT_CUDA_ATTN_BWD=mma)") {
  // attention_fwd_mma.cu and attention_bwd_mma.cu: PTX mma.sync fragments,
  // tile products and accumulators in registers; head dims up to 64 (above,
  // the general kernels run).
  const std::vector<Case> cases = {
      {2, 1, 1, 16, 1, false, false}, {1, 2, 7, 16, 2, true, false},   {3, 1, 63, 32, 3, false, true},
      {3, 1, 100, 24, 4, true, true}, {1, 1, 130, 64, 3, false, false}, {1, 1, 129, 64, 1, true, false},
      {2, 1, 70, 20, 2, false, true}, {1, 1, 200, 40, 7, true, true},
      {1, 1, 260, 32, 3, true, false},  // causal pairs below the diagonal without mask tests
      {1, 1, 127, 32, 2, false, false},  // the last key tile ends one past T: it keeps its mask tests
  };
  setenv("HKT_CUDA_ATTN_FWD", "mma", 1);
  setenv("HKT_CUDA_ATTN_BWD", "mma", 1);
  compare_cases(cases, 301, "mma kernels");
  // A race between the lanes or warps of the new kernel would show here too.
  CHECK(order_independent(make_inputs(3, 1, 100, 24, 3, true, 9), true, 0.2));
  unsetenv("HKT_CUDA_ATTN_FWD");
  unsetenv("HKT_CUDA_ATTN_BWD");
}

TEST_CASE("lab, emulated: the mma kernels take aligned rows and leave the rest to the general kernels") {
  // The mma kernels read and write whole float4s and float2s: the host gives
  // them a call only when dh % 4 == 0 and every tensor is 16-byte aligned
  // (mma_rows_aligned). The emulator counts the mma.sync products, so this
  // sees which kernels ran; the results must be right either way.
  const Inputs aligned = make_inputs(2, 1, 100, 24, 3, true, 61), odd = make_inputs(2, 1, 70, 18, 2, true, 62);
  struct Run {
    const Inputs* in;
    Misalign misalign;
    bool fwd_mma, bwd_mma;  // whether the mma forward / backward should run
    const char* what;
  };
  const Run runs[] = {{&aligned, Misalign::none, true, true, "aligned"},
                      {&odd, Misalign::none, false, false, "dh = 18"},
                      {&aligned, Misalign::q0, false, false, "q[0] 4 bytes off"},
                      {&aligned, Misalign::v, false, false, "v 4 bytes off"},
                      {&aligned, Misalign::dout, true, false, "dout 4 bytes off"}};
  setenv("HKT_CUDA_ATTN_FWD", "mma", 1);
  for (const char* bwd : {"mma", "fused", "fused8", "fused8-async"}) {
    setenv("HKT_CUDA_ATTN_BWD", bwd, 1);
    for (const Run& r : runs) {
      const std::string what = std::string(bwd) + ", " + r.what;
      const double scale = 0.2;
      const auto emu = run_emulated(*r.in, DType::Float32, true, scale, kAllGrads, r.misalign);
      CHECK_MESSAGE((g_last_syncs.fwd > 0) == r.fwd_mma, what, ": forward mma.sync products ", g_last_syncs.fwd);
      CHECK_MESSAGE((g_last_syncs.bwd > 0) == r.bwd_mma, what, ": backward mma.sync products ", g_last_syncs.bwd);
      const auto cpu = hkt::test::run(*r.in, Device::cpu(), DType::Float32, true, scale, false);
      check_all(emu, cpu, what + ": emulated cuda vs cpu fused", 1e-4);
    }
  }
  unsetenv("HKT_CUDA_ATTN_FWD");
  unsetenv("HKT_CUDA_ATTN_BWD");
}

TEST_CASE("lab, emulated: the mma kernels' L2 prefetches change no bit (HKT_CUDA_ATTN_PREFETCH=0)") {
  // The prefetches are hints (prefetch_tile_l2); in the emulator each reads a
  // byte of its line, so an address outside the tensors shows under ASan. On
  // or off, every output must be the same bits, for every mma kernel.
  const Inputs in = make_inputs(2, 1, 150, 24, 3, true, 67);
  const char* pairs[][2] = {{"mma", "mma"}, {"mma-lean", "fused"}, {"mma-async", "fused8"}, {"mma", "fused8-async"}};
  for (const auto& pair : pairs) {
    const char *fwd = pair[0], *bwd = pair[1];  // not a structured binding: clang 14 cannot capture one
    setenv("HKT_CUDA_ATTN_FWD", fwd, 1);
    setenv("HKT_CUDA_ATTN_BWD", bwd, 1);
    const uint64_t before = hkt_emu::prefetch_count();
    const auto on = run_emulated(in, DType::Float32, true, 0.2);
    const uint64_t mid = hkt_emu::prefetch_count();
    setenv("HKT_CUDA_ATTN_PREFETCH", "0", 1);
    const auto off = run_emulated(in, DType::Float32, true, 0.2);
    unsetenv("HKT_CUDA_ATTN_PREFETCH");
    CHECK_MESSAGE(same_bits(on, off), fwd, " + ", bwd);
    CHECK_MESSAGE(mid > before, fwd, " + ", bwd, ": no prefetch ran");
    CHECK_MESSAGE(hkt_emu::prefetch_count() == mid, fwd, " + ", bwd, ": prefetches with HKT_CUDA_ATTN_PREFETCH=0");
  }
  unsetenv("HKT_CUDA_ATTN_FWD");
  unsetenv("HKT_CUDA_ATTN_BWD");
}

TEST_CASE("lab, emulated: the mma forward fetching key tiles with cp.async (HKT_CUDA_ATTN_FWD=mma-async)") {
  // The emulator lands each cp.async copy only at the thread's wait: a tile
  // used before its wait, or a barrier missing after it, gives other results.
  // dh = 20: float4 rows, and the last 32-column block half empty.
  const std::vector<Case> cases = {
      {2, 1, 1, 16, 1, false, false}, {1, 2, 7, 16, 2, true, false},   {3, 1, 63, 32, 3, false, true},
      {3, 1, 100, 24, 4, true, true}, {1, 1, 200, 64, 3, false, false}, {1, 1, 260, 64, 1, true, true},
      {2, 1, 70, 20, 2, false, true},
  };
  setenv("HKT_CUDA_ATTN_FWD", "mma-async", 1);
  compare_cases(cases, 501, "mma forward, cp.async");
  CHECK(order_independent(make_inputs(2, 1, 150, 32, 3, true, 23), true, 0.2));
  unsetenv("HKT_CUDA_ATTN_FWD");
}

TEST_CASE("lab, emulated: the mma forward with Q and K plain (HKT_CUDA_ATTN_FWD=mma-lean)") {
  // Q and K stay plain in shared memory and each warp splits their fragments
  // as it reads them (warp_abt); the levels' weights come from shared memory.
  // L = 7 reads every one of them.
  const std::vector<Case> cases = {
      {2, 1, 1, 16, 1, false, false}, {1, 2, 7, 16, 2, true, false},   {3, 1, 63, 32, 3, false, true},
      {3, 1, 100, 24, 4, true, true}, {1, 1, 200, 64, 3, false, false}, {1, 1, 260, 64, 1, true, true},
      {2, 1, 70, 20, 2, false, true}, {1, 1, 200, 40, 7, true, true},
  };
  setenv("HKT_CUDA_ATTN_FWD", "mma-lean", 1);
  compare_cases(cases, 551, "mma forward, lean");
  CHECK(order_independent(make_inputs(2, 1, 150, 32, 3, true, 29), true, 0.2));
  unsetenv("HKT_CUDA_ATTN_FWD");
}

TEST_CASE("lab, emulated: the forward on warpgroup products (HKT_CUDA_ATTN_FWD=wgmma, wgmma2)") {
  // sm90a/attention_fwd_wgmma.cu: Q, K and V^T split into gmma tiles, S and
  // P V as wgmma products that the emulator does only at their wait, from the
  // shared memory and registers as they are then (a tile overwritten, or P
  // changed, before the wait shows). dh = 20: columns 20 .. 31 of the tiles zero.
  // wgmma2: two warpgroups per block share each key tile; with an odd number
  // of query tiles the last block's second warpgroup has no rows, and causal
  // blocks run to the second warpgroup's diagonal.
  const std::vector<Case> cases = {
      {2, 1, 1, 16, 1, false, false}, {1, 2, 7, 16, 2, true, false},   {3, 1, 63, 32, 3, false, true},
      {3, 1, 100, 24, 4, true, true}, {1, 1, 200, 64, 3, false, false}, {1, 1, 260, 64, 1, true, true},
      {2, 1, 70, 20, 2, false, true}, {1, 1, 200, 40, 7, true, true},
  };
  for (const char* knob : {"wgmma", "wgmma2"}) {
    setenv("HKT_CUDA_ATTN_FWD", knob, 1);
    const uint64_t before = hkt_emu::wgmma_count();
    compare_cases(cases, 571, std::string(knob) + " forward");
    CHECK_MESSAGE(hkt_emu::wgmma_count() > before, knob);
    CHECK_MESSAGE(order_independent(make_inputs(2, 1, 150, 32, 3, true, 31), true, 0.2), knob);
  }
  unsetenv("HKT_CUDA_ATTN_FWD");
}

TEST_CASE("lab, emulated: the backward on warpgroup products (HKT_CUDA_ATTN_BWD=wgmma)") {
  // sm90a/attention_bwd_wgmma.cu. Key side, per query tile: S^T = K Q^T and
  // dP^T = V dO^T from Q and dO as they are, then dV += P^T dO and dK +=
  // dS^T Q from P^T, dS^T in registers and Q, dO transposed, which the block
  // stores while the first products run (the emulator does those at their
  // wait: a transposed tile stored over their operands shows). Query side,
  // per key tile: S, dP, then dQ += dS K with K transposed. The levels'
  // buffers lie over tiles while those are free. L = 7 at dh = 64 takes the
  // most shared memory; dh = 20: pad columns.
  const std::vector<Case> cases = {
      {2, 1, 1, 16, 1, false, false}, {1, 2, 7, 16, 2, true, false},   {3, 1, 63, 32, 3, false, true},
      {3, 1, 100, 24, 4, true, true}, {1, 1, 200, 64, 3, false, false}, {1, 1, 260, 64, 1, true, true},
      {2, 1, 70, 20, 2, false, true}, {1, 1, 200, 40, 7, true, true},   {1, 1, 150, 64, 7, false, true},
  };
  setenv("HKT_CUDA_ATTN_BWD", "wgmma", 1);
  for (const char* fwd : {"default", "wgmma"}) {
    if (std::string(fwd) == "wgmma") setenv("HKT_CUDA_ATTN_FWD", fwd, 1);
    const uint64_t before = hkt_emu::wgmma_count();  // with the default forward: the backward's alone
    compare_cases(cases, 591, std::string("wgmma backward, forward ") + fwd);
    CHECK_MESSAGE(hkt_emu::wgmma_count() > before, fwd);
    CHECK_MESSAGE(order_independent(make_inputs(2, 1, 150, 32, 3, true, 37), true, 0.2), fwd);
  }
  unsetenv("HKT_CUDA_ATTN_FWD");
  unsetenv("HKT_CUDA_ATTN_BWD");
}

TEST_CASE("lab, emulated: cp.async copies landing at issue or at the wait give the same bits") {
  // A GPU lands a cp.async copy anywhere between its issue and its wait. The
  // emulator lands it at the wait (the other suites: a tile read too early
  // shows) or at issue (here: a copy into a buffer that other threads still
  // read shows), with the threads in either order.
  const Inputs in = make_inputs(2, 1, 200, 32, 3, true, 71);
  const char* pairs[][2] = {{"mma-async", "fused8-async"}};
  for (const auto& pair : pairs) {
    const char *fwd = pair[0], *bwd = pair[1];  // not a structured binding: clang 14 cannot capture one
    setenv("HKT_CUDA_ATTN_FWD", fwd, 1);
    setenv("HKT_CUDA_ATTN_BWD", bwd, 1);
    setenv("HKT_CUDA_ATTN_BWD_GROUPS", "2", 1);  // blocks that walk several key tiles
    const auto at_wait = run_emulated(in, DType::Float32, true, 0.2);
    hkt_emu::set_cp_async_eager(true);
    for (bool reverse : {false, true}) {
      hkt_emu::set_reverse_order(reverse);
      CHECK_MESSAGE(same_bits(run_emulated(in, DType::Float32, true, 0.2), at_wait), fwd, " + ", bwd,
                    reverse ? ", reversed" : "");
    }
    hkt_emu::set_reverse_order(false);
    hkt_emu::set_cp_async_eager(false);
  }
  unsetenv("HKT_CUDA_ATTN_FWD");
  unsetenv("HKT_CUDA_ATTN_BWD");
  unsetenv("HKT_CUDA_ATTN_BWD_GROUPS");
}

TEST_CASE("lab, emulated: the single-pass backward (HKT_CUDA_ATTN_BWD=fused, fused8, fused8-async)") {
  // attention_bwd_fused.cu: one kernel per key-tile group, dQ summed from the
  // groups' partials; fused8 in blocks of 8 warps (two query halves per key
  // warp, their dK and dV shares summed per key tile). The emulated device has
  // 132 SMs, so small B H gives as many groups as key tiles;
  // HKT_CUDA_ATTN_BWD_GROUPS forces fewer, so that a block walks several key
  // tiles (and, causal, groups skip query tiles).
  const std::vector<Case> cases = {
      {2, 1, 1, 16, 1, false, false}, {1, 2, 7, 16, 2, true, false},   {3, 1, 63, 32, 3, false, true},
      {3, 1, 100, 24, 4, true, true}, {1, 1, 130, 64, 3, false, false}, {1, 1, 129, 64, 1, true, false},
      {2, 1, 70, 20, 2, false, true}, {1, 1, 200, 40, 7, true, true},   {1, 2, 300, 64, 3, true, true},
      {2, 1, 90, 36, 2, true, true},  // dh = 36: the second 32-column block takes one float4 per row
      {1, 1, 260, 32, 3, true, false},  // causal pairs below the diagonal without mask tests
      {1, 1, 127, 32, 2, false, false},  // the last key tile ends one past T: it keeps its mask tests
  };
  for (const char* variant : {"fused", "fused8", "fused8-async"}) {
    setenv("HKT_CUDA_ATTN_BWD", variant, 1);
    const std::string name = std::string("single-pass backward (") + variant + ")";
    compare_cases(cases, 401, name);
    const std::vector<const char*> group_counts =
        kAsanCases ? std::vector<const char*>{"2"} : std::vector<const char*>{"1", "2", "3"};
    for (const char* groups : group_counts) {
      setenv("HKT_CUDA_ATTN_BWD_GROUPS", groups, 1);
      compare_cases({{2, 1, 300, 32, 3, true, true}, {1, 1, 260, 64, 1, false, false}}, 451,
                    name + ", " + groups + " groups");
    }
    unsetenv("HKT_CUDA_ATTN_BWD_GROUPS");
    // The groups' partials (and fused8's halves) are summed in a fixed order:
    // the same bits whatever order the blocks and threads run in.
    CHECK_MESSAGE(order_independent(make_inputs(2, 1, 200, 24, 3, true, 19), true, 0.2), name);
  }
  unsetenv("HKT_CUDA_ATTN_BWD");
}

TEST_CASE("lab, emulated: every backward writes only the gradients asked for, the same bits") {
  // The lab's backward kernels (testing/emulated_attention.hpp); under ASan (slow) the
  // 8-warp single pass alone. (The default kernels: tests/.)
  check_gradient_subsets(kAsanCases ? std::vector<const char*>{"fused8"}
                                    : std::vector<const char*>{"general-regs", "mma", "fused", "fused8",
                                                               "fused8-async"});
}

TEST_CASE("lab, emulated: the backward's accumulators in registers (HKT_CUDA_ATTN_BWD_ACC=regs)") {
  // The default keeps dK_0, dV and dQ_0 in shared memory, as float64 does; the
  // knob keeps them in WMMA fragments (2 per warp, dh <= 64; attention_bwd_regs.cu).
  const std::vector<Case> cases = {{3, 1, 100, 24, 4, true, true}, {1, 1, 97, 64, 2, false, false},
                                   {1, 2, 130, 64, 1, false, true}, {2, 1, 70, 20, 3, true, false}};
  setenv("HKT_CUDA_ATTN_BWD_ACC", "regs", 1);
  compare_cases(cases, 201, "register accumulators");
  unsetenv("HKT_CUDA_ATTN_BWD_ACC");
}

TEST_CASE("lab, emulated: every kernel name runs kernels of its own") {
  // HKT_CUDA_ATTN_FWD / _BWD (and the tuner's candidates) name the variants;
  // two names that launched the same kernels would be a slip in the dispatch
  // (attention.cu's forward_with / backward_with), which results alone cannot
  // show: every variant computes the same thing.
  install_host_allocator();
  const Inputs in = make_inputs(1, 1, 70, 32, 2, false, 5);
  const auto kernels_of = [&](const char* var, const char* name) {
    setenv(var, name, 1);
    hkt_emu::clear_launched_kernels();
    run_emulated(in, DType::Float32, false, 0.2);
    unsetenv(var);
    return hkt_emu::launched_kernels();
  };
  for (const char* var : {"HKT_CUDA_ATTN_FWD", "HKT_CUDA_ATTN_BWD"}) {
    const bool fwd = std::string(var) == "HKT_CUDA_ATTN_FWD";
    const std::vector<std::string> names =
        fwd ? std::vector<std::string>{"general", "mma", "mma-async", "mma-lean", "wgmma", "wgmma2"}
            : std::vector<std::string>{"general", "general-regs", "mma", "fused", "fused8", "fused8-async", "wgmma"};
    std::vector<std::set<const void*>> seen;
    for (const std::string& n : names) seen.push_back(kernels_of(var, n.c_str()));
    for (size_t i = 0; i < names.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        CHECK_MESSAGE(seen[i] != seen[j], (std::string(var) + ": " + names[i] + " ran " + names[j] + "'s kernels"));
  }
}

TEST_CASE("lab, emulated: autotuning picks a kernel per call, each checked against the general one") {
  // tools/cuda-lab/attention_tune.cu over the real kernels. The emulator's times
  // say nothing of a GPU's, so which kernel wins is not checked here: that
  // every candidate runs and matches, that the one chosen is the one that
  // then runs, and what makes two calls different to the tuner.
  install_host_allocator();
  cuda::clear_attention_autotune();
  cuda::set_attention_autotune(1);
  // Under ASan (7x slower) a smaller first shape: what ASan adds here is the tuner's memory checks.
  const Case small = kAsanCases ? Case{1, 1, 40, 16, 2, true, true} : Case{2, 1, 70, 32, 3, true, true};
  const Case wide{1, 2, 100, 100, 2, false, false};
  compare_cases({small, wide}, 811, "autotuned");
  std::vector<cuda::TuneResult> res = cuda::attention_autotune_results();
  REQUIRE(res.size() == 4);  // each case's forward and backward
  for (const cuda::TuneResult& r : res) {
    INFO(cuda::describe(r.key));
    REQUIRE(r.trials.size() == (r.key.backward ? 7u : 6u));
    CHECK(r.trials[0].kernel == "general");
    CHECK(r.trials[0].ms >= 0);
    for (const cuda::TuneTrial& t : r.trials) {
      INFO(t.kernel << ": " << t.outcome);
      // dh = 100: only the general kernels take the call.
      const bool general = t.kernel == "general";
      CHECK((t.outcome == "chosen") == (t.kernel == r.chosen));
      if (r.key.dh == 100 && !general)
        CHECK(t.outcome == "not applicable");
      else
        CHECK((t.outcome == "chosen" || t.outcome == "slower"));
      if (t.ms >= 0) CHECK(t.rel_error <= cuda::kTuneRelTol);
    }
  }
  CHECK(res[0].key.T == small.T);
  CHECK(!res[0].key.backward);
  CHECK(res[1].key.backward);
  CHECK(res[1].key.want == 15u);

  // The same shape again: decided, so nothing is tuned, and the chosen kernels run.
  const uint64_t wg = hkt_emu::wgmma_count();
  compare_cases({small}, 900, "autotuned, decided");
  CHECK(cuda::attention_autotune_results().size() == 4);
  const std::string &f = res[0].chosen, &b = res[1].chosen;
  INFO("chosen: forward " << f << ", backward " << b);
  if (f == "general") CHECK(g_last_syncs.fwd == 0);
  if (f.rfind("mma", 0) == 0) CHECK(g_last_syncs.fwd > 0);
  if (b.rfind("general", 0) == 0) CHECK(g_last_syncs.bwd == 0);
  if (b == "mma" || b.rfind("fused", 0) == 0) CHECK(g_last_syncs.bwd > 0);
  CHECK((hkt_emu::wgmma_count() > wg) == (f.rfind("wgmma", 0) == 0 || b == "wgmma"));

  // A misaligned input, or other gradients asked for: other calls to the tuner.
  const Inputs in = make_inputs(small.B, small.H, small.T, small.dh, small.L, small.padded, 77);
  run_emulated(in, DType::Float32, small.causal, 0.2, kAllGrads, Misalign::v);
  run_emulated(in, DType::Float32, small.causal, 0.2, kDV | kDLambda);
  res = cuda::attention_autotune_results();
  REQUIRE(res.size() == 7);  // the second call's forward was decided already
  CHECK(!res[4].key.aligned);
  CHECK(res[4].chosen == "general");
  CHECK(!res[5].key.aligned);
  CHECK(res[5].chosen.rfind("general", 0) == 0);
  CHECK(res[6].key.aligned);
  CHECK(res[6].key.want == (kDV | kDLambda));

  // HKT_CUDA_ATTN_AUTOTUNE_SKIP: the kernels it names are not tried.
  setenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP", "wgmma,wgmma2,mma-lean", 1);
  run_emulated(make_inputs(1, 1, 30, 16, 1, false, 78), DType::Float32, false, 0.2, kDQ);
  unsetenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP");
  res = cuda::attention_autotune_results();
  REQUIRE(res.size() == 9);
  CHECK(res[7].trials.size() == 3u);  // general, mma, mma-async
  CHECK(res[8].trials.size() == 6u);  // every backward but wgmma

  // A knob names the kernel and wins: this shape's forward is not tuned.
  setenv("HKT_CUDA_ATTN_FWD", "mma", 1);
  compare_cases({{1, 1, 40, 16, 1, false, false}}, 950, "autotuned backward, mma forward");
  unsetenv("HKT_CUDA_ATTN_FWD");
  res = cuda::attention_autotune_results();
  REQUIRE(res.size() == 10);
  CHECK(res[9].key.backward);
  cuda::set_attention_autotune(-1);
  cuda::clear_attention_autotune();
}

TEST_CASE("lab, emulated: a decided call runs its kernels at once; one the skip variable names is tuned again") {
  // A decided call runs its kernel at once (autotune() returns its index
  // without trials): that path must launch what the knobs naming the same kernels
  // launch, and a decision HKT_CUDA_ATTN_AUTOTUNE_SKIP names must be tuned again.
  install_host_allocator();
  const Inputs in = make_inputs(1, 1, 70, 32, 2, false, 6);
  const auto launched = [&] {
    hkt_emu::clear_launched_kernels();
    run_emulated(in, DType::Float32, false, 0.2);
    return hkt_emu::launched_kernels();
  };
  setenv("HKT_CUDA_ATTN_FWD", "mma-lean", 1);
  setenv("HKT_CUDA_ATTN_BWD", "fused8", 1);
  const std::set<const void*> want = launched();
  unsetenv("HKT_CUDA_ATTN_FWD");
  unsetenv("HKT_CUDA_ATTN_BWD");
  cuda::clear_attention_autotune();
  cuda::set_attention_autotune(1);
  launched();  // tuned: the calls' keys
  std::vector<cuda::TuneResult> res = cuda::attention_autotune_results();
  REQUIRE(res.size() == 2);
  const cuda::TuneKey fwd = res[0].key, bwd = res[1].key;
  cuda::clear_attention_autotune();
  cuda::set_attention_decision(fwd, "mma-lean");
  cuda::set_attention_decision(bwd, "fused8");
  CHECK(cuda::attention_decision(fwd) == "mma-lean");
  CHECK(launched() == want);
  res = cuda::attention_autotune_results();
  REQUIRE(res.size() == 2);
  CHECK((res[0].preset && res[1].preset));
  setenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP", "mma-lean", 1);
  launched();
  unsetenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP");
  res = cuda::attention_autotune_results();
  REQUIRE(res.size() == 2);
  CHECK_FALSE(res[0].preset);  // the forward tuned again, without mma-lean
  CHECK(res[0].trials.size() == 5u);
  CHECK(res[0].chosen != "mma-lean");
  CHECK(res[1].preset);
  CHECK(res[1].chosen == "fused8");
  cuda::set_attention_autotune(-1);
  cuda::clear_attention_autotune();
  CHECK(cuda::attention_decision(fwd).empty());
}

TEST_CASE("lab, emulated: random shapes, every kernel variant") {
  // Random (T, dh, L, masks) drawn with a fixed seed, each under a knob (the
  // variants fall back to the default kernels above dh = 64); two per knob.
  compare_random_shapes(kAsanCases ? 2 : 22,
                        {{"HKT_CUDA_ATTN_FWD", "mma"}, {"HKT_CUDA_ATTN_BWD", "mma"},
                         {"HKT_CUDA_ATTN_BWD_ACC", "regs"}, {"HKT_CUDA_ATTN_BWD", "fused"},
                         {"HKT_CUDA_ATTN_FWD", "mma-async"}, {"HKT_CUDA_ATTN_BWD", "fused8"},
                         {"HKT_CUDA_ATTN_FWD", "mma-lean"}, {"HKT_CUDA_ATTN_BWD", "fused8-async"},
                         {"HKT_CUDA_ATTN_FWD", "wgmma"}, {"HKT_CUDA_ATTN_FWD", "wgmma2"},
                         {"HKT_CUDA_ATTN_BWD", "wgmma"}});
}
