// The fused CUDA attention kernel (kernels/cuda/attention.cu) against the CPU
// fused kernel and the composite reference (plain ops, T x T, float64;
// tests/helpers/composite_attention.hpp), on random shapes: T not a power of
// two (1 .. 1000), L = 1..4, causal or not, with and without key padding;
// outputs and every gradient.
#include "cuda_test_main.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "helpers/attention_cases.hpp"
#include "helpers/temp_dir.hpp"

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

// One knob ("NAME=value") set while the variant computes what the CPU fused kernel does.
static void check_knob(const std::string& kv) {
  struct Case {
    int64_t B, H, T, dh, L;
  };
  const std::vector<Case> cases = {{2, 2, 7, 16, 2}, {3, 2, 100, 24, 4}, {1, 2, 1000, 64, 3}, {2, 2, 129, 40, 1}};
  const std::string name = kv.substr(0, kv.find('=')), value = kv.substr(kv.find('=') + 1);
  setenv(name.c_str(), value.c_str(), 1);
  uint64_t seed = 71;
  for (Case c : cases)
    for (bool causal : {false, true}) {
      c.T = test_T(c.T);
      const Inputs in = make_inputs(c.B, c.H, c.T, c.dh, c.L, true, seed++);
      const double scale = 1.0 / std::sqrt(static_cast<double>(c.dh));
      const auto gpu = run(in, Device::cuda(), DType::Float32, causal, scale, false);
      const auto cpu = run(in, Device::cpu(), DType::Float32, causal, scale, false);
      check_all(gpu, cpu, kv + ": T " + std::to_string(c.T) + " dh " + std::to_string(c.dh) + " L " +
                              std::to_string(c.L) + (causal ? " causal" : ""), 1e-4);
    }
  unsetenv(name.c_str());
}

TEST_CASE("cuda attention: the library's kernel variant behind a knob; the lab's need the lab") {
  // HKT_CUDA_ATTN_BWD_ACC=regs: the general backward's accumulators in
  // registers, which must compute what the default kernels compute. The
  // other variants are tools/cuda-lab's: without install_lab_variants() a
  // knob naming one is an error saying so (the emulator checks them with the
  // lab installed, test_emulated_attention; hkt-bench-gpu --probe on a GPU).
  HKT_REQUIRE_GPU();
  check_knob("HKT_CUDA_ATTN_BWD_ACC=regs");
  const Inputs in = make_inputs(1, 2, 40, 16, 2, false, 7);
  for (const char* kv : {"HKT_CUDA_ATTN_FWD=mma", "HKT_CUDA_ATTN_BWD=fused"}) {
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

TEST_CASE("cuda attention: autotuning (hkt::cuda_attention_autotune)") {
  // The first call of each shape runs every kernel variant the program has
  // (the library's general and general-regs; the lab's where installed),
  // checks it against the general kernel and keeps the fastest
  // (kernels/cuda/attention_tune.cu).
  HKT_REQUIRE_GPU();
  cuda_attention_autotune_reset();
  cuda_attention_autotune(true, true);
  struct Case {
    int64_t B, H, T, dh, L;
    bool causal;
  };
  uint64_t seed = 401;
  // dh = 100: only the general kernels take it.
  for (Case c : std::vector<Case>{{1, 2, 1000, 64, 3, false}, {1, 2, 129, 40, 1, true}, {1, 1, 100, 100, 2, true}}) {
    c.T = test_T(c.T, 130);  // every kernel runs 3 times per shape: 130 rows (3 tiles) in the emulator
    const Inputs in = make_inputs(c.B, c.H, c.T, c.dh, c.L, true, seed++);
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.dh));
    const std::string what = "autotuned: T " + std::to_string(c.T) + " dh " + std::to_string(c.dh) + " L " +
                             std::to_string(c.L) + (c.causal ? " causal" : "");
    const auto cpu = run(in, Device::cpu(), DType::Float32, c.causal, scale, false);
    // Twice: the call that tunes, and one that only runs the kernels chosen.
    for (int rep = 0; rep < 2; ++rep)
      check_all(run(in, Device::cuda(), DType::Float32, c.causal, scale, false), cpu, what, 1e-4);
  }
  const std::vector<CudaAttentionChoice> choices = cuda_attention_autotune_choices();
  CHECK(choices.size() == 6);  // forward and backward of 3 calls, each tuned once
  for (const CudaAttentionChoice& c : choices) {
    MESSAGE(c.call << ": " << c.kernel);
    REQUIRE(!c.trials.empty());
    CHECK(c.trials[0].kernel == "general");
    for (const CudaAttentionTrial& t : c.trials) {
      INFO(c.call << ", " << t.kernel << ": " << t.outcome);
      CHECK((t.outcome == "chosen") == (t.kernel == c.kernel));
      // On a GPU a variant that cannot take a call says so; one that gives
      // other results or fails is a bug, even though the tuner passes over it.
      CHECK(t.outcome.rfind("failed", 0) != 0);
      CHECK(t.outcome != "wrong results");
    }
  }
  // Saved and read back (a later process): the same calls run those kernels, tuning none.
  const std::string saved = cuda_attention_autotune_to_json();
  cuda_attention_autotune_reset();
  cuda_attention_autotune_from_json(saved);
  const Inputs in = make_inputs(1, 2, test_T(1000, 130), 64, 3, true, 401);
  check_all(run(in, Device::cuda(), DType::Float32, false, 0.125, false),
            run(in, Device::cpu(), DType::Float32, false, 0.125, false), "autotuned, read back", 1e-4);
  const std::vector<CudaAttentionChoice> read_back = cuda_attention_autotune_choices();
  REQUIRE(read_back.size() == choices.size());
  for (size_t i = 0; i < choices.size(); ++i) {
    CHECK(read_back[i].call == choices[i].call);
    CHECK(read_back[i].kernel == choices[i].kernel);
    CHECK(read_back[i].preset);
  }
  cuda_attention_autotune(false);
  cuda_attention_autotune_reset();
}

TEST_CASE("cuda attention: a run folder's kernels (tasks::RunAttentionKernels); the tuner's setting restored after") {
  // What hkt-train --cuda-autotune, --resume and hkt-eval --device cuda do
  // with RUN_DIR/attention_kernels.json (tasks/include/hkt/tasks/attention_kernels.hpp).
  HKT_REQUIRE_GPU();
  using tasks::KernelsUse;
  using tasks::RunAttentionKernels;
  const test::TempDir dir("run_kernels");
  const auto file = dir / tasks::kAttentionKernelsFile;
  const auto decisions = [](const std::string& text) {
    int64_t n = 0;
    for (size_t at = text.find("\"kernel\""); at != std::string::npos; at = text.find("\"kernel\"", at + 1)) ++n;
    return n;
  };
  const auto call = [](int64_t T, uint64_t seed) {  // a forward and a backward of one small shape
    return run(make_inputs(1, 2, T, 16, 2, true, seed), Device::cuda(), DType::Float32, true, 0.25, false);
  };
  cuda_attention_autotune_reset();
  cuda_attention_autotune(false);
  {  // a training run with cuda_autotune: the tuner on, each decision written as it is made
    const RunAttentionKernels k(dir.str(), Device::cuda(), KernelsUse::train, true);
    CHECK(cuda_attention_autotune_enabled());
    CHECK_FALSE(k.read());
    CHECK(decisions(tasks::read_text_file(file)) == 0);
    call(40, 501);
    CHECK(decisions(tasks::read_text_file(file)) == 2);
  }
  CHECK_FALSE(cuda_attention_autotune_enabled());  // as before
  const std::string saved = tasks::read_text_file(file);
  {  // an evaluation: the decisions preset and the tuner on; another shape is tuned, the file not written
    cuda_attention_autotune_reset();
    const RunAttentionKernels k(dir.str(), Device::cuda(), KernelsUse::evaluate);
    CHECK(k.read());
    CHECK(cuda_attention_autotune_enabled());
    call(40, 502);
    call(24, 503);
    const std::vector<CudaAttentionChoice> c = cuda_attention_autotune_choices();
    REQUIRE(c.size() == 4);
    CHECK((c[0].preset && c[1].preset && !c[2].preset && !c[3].preset));
  }
  CHECK(tasks::read_text_file(file) == saved);
  CHECK_FALSE(cuda_attention_autotune_enabled());
  {  // the CPU, and a folder without the file: nothing read, the tuner left alone
    const RunAttentionKernels cpu(dir.str(), Device::cpu(), KernelsUse::evaluate, true);
    CHECK_FALSE(cpu.read());
    CHECK_FALSE(cuda_attention_autotune_enabled());
    const test::TempDir empty("run_kernels_none");
    const RunAttentionKernels none(empty.str(), Device::cuda(), KernelsUse::resume);
    CHECK_FALSE(none.read());
    CHECK_FALSE(cuda_attention_autotune_enabled());
    CHECK_FALSE(std::filesystem::exists(empty / tasks::kAttentionKernelsFile));
  }
  // A malformed file: InputError naming it, and the setting as it was.
  tasks::write_file_atomic(file, "{\"format\": \"hkt-attention-kernels\", \"version\": 2}");
  cuda_attention_autotune(true);
  CHECK_THROWS_WITH_AS(RunAttentionKernels(dir.str(), Device::cuda(), KernelsUse::resume),
                       doctest::Contains("attention_kernels.json: attention kernel decisions: version 2 is not 1"),
                       tasks::InputError);
  CHECK(cuda_attention_autotune_enabled());
  {  // scopes nest, each restoring the one before
    const CudaAttentionAutotuneScope off(false);
    CHECK_FALSE(cuda_attention_autotune_enabled());
    {
      const CudaAttentionAutotuneScope on(true, true);
      CHECK(cuda_attention_autotune_enabled());
    }
    CHECK_FALSE(cuda_attention_autotune_enabled());
  }
  CHECK(cuda_attention_autotune_enabled());
  // A whole training run with cuda_autotune, without a folder: the tuner off again after it.
  cuda_attention_autotune(false);
  tasks::TrainConfig cfg;
  cfg.task = "synthetic";
  cfg.model = "hkt-tiny";
  cfg.data.train_size = 4;
  cfg.data.val_size = 2;
  cfg.data.test_size = 2;
  cfg.batch_size = 2;
  cfg.steps = 1;
  cfg.eval_batches = 1;
  tasks::RunOptions opt;
  opt.quiet = true;
  opt.device = Device::cuda();
  opt.cuda_autotune = true;
  cuda_attention_autotune_reset();
  tasks::train(cfg, opt);
  CHECK_FALSE(cuda_attention_autotune_choices().empty());  // it tuned
  CHECK_FALSE(cuda_attention_autotune_enabled());
  cuda_attention_autotune_reset();
}

TEST_CASE("cuda attention: the kernels the knobs name, and those the tuner skips (cuda_attention_kernel_knobs, _skipped)") {
  // What hkt-bench-gpu asks before its autotuned rows: a knob wins over the tuner.
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
  // The kernels the tuner passes over (tools/cuda-lab/gpu-probe's list), as hkt-bench-gpu asks.
  unsetenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP");
  CHECK_FALSE(cuda_attention_kernel_skipped("wgmma"));
  setenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP", "mma-lean,wgmma", 1);
  CHECK(cuda_attention_kernel_skipped("wgmma"));
  CHECK_FALSE(cuda_attention_kernel_skipped("wgmma2"));
  setenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP", "mma-lean,flash", 1);
  CHECK_THROWS_WITH_AS(cuda_attention_kernel_skipped("mma"), doctest::Contains("\"flash\" is not a kernel"), Error);
  unsetenv("HKT_CUDA_ATTN_AUTOTUNE_SKIP");
}
