// hkt-bench-gpu: the CUDA backend's benchmark table (tools/gpu-check runs it), and
// the lab's kernels (README.md), installed into the library at start, each timed
// against the default kernels (bench_variants) and checked against them (--probe).
//
// Fused attention forward and forward+backward on the GPU, D = 512, H = 8
// (dh = 64), B = max(1, 16384 / T) sequences of T = 1024 .. 16384: MHA (the
// L = 1 kernel) and HKT with L = 1..4 (bidirectional); then one training
// step (forward, backward, AdamW) of the hkt-small classifier and hkt-train's step
// (the loss read, the gradients clipped), and the
// kernel variants behind benchmark knobs (bench_variants), and MHA and HKT
// L = 3 with autotuning on (bench_autotuned). Times are the best of --reps
// calls after one warm-up, in milliseconds.
//
//   hkt-bench-gpu [--quick] [--reps N] [--max-t T] [--profile | --probe]
// Prints one markdown table; without a GPU it says why and exits 0 (77 with
// --probe: nothing was probed). --profile
// runs each attention kernel once instead, for ncu (profile_kernels); --probe
// runs the kernels the knobs name once against the defaults (tools/cuda-lab/gpu-probe).
// Knob rows and profile setups that name a kernel HKT_CUDA_ATTN_AUTOTUNE_SKIP
// lists are not run. With a knob set (HKT_CUDA_ATTN_FWD=mma ...), the main
// table and the training step are the knobs' and nothing else is timed.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "hkt/hkt.hpp"
#include "tools/cuda-lab/attention_tune.hpp"
#include "tools/cuda-lab/variants.hpp"

using namespace hkt;

namespace {

double time_ms(const std::function<void()>& f, int reps) {
  f();  // warm-up (also fills the allocator's cache)
  cuda_synchronize();
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    cuda_synchronize();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

void row(const std::string& t, const std::string& b, const std::string& what, const std::string& impl, double fwd,
         double both, const std::string& extra) {
  char f[32] = "", fb[32] = "";
  if (fwd > 0) std::snprintf(f, sizeof f, "%.2f", fwd);
  if (both > 0) std::snprintf(fb, sizeof fb, "%.2f", both);
  std::printf("| %s | %s | %s | %s | %s | %s | %s |\n", t.c_str(), b.c_str(), what.c_str(), impl.c_str(), f, fb,
              extra.c_str());
  std::fflush(stdout);
}

// Best fwd and fwd+bwd times of the fused kernel for one (T, L), bidirectional.
std::pair<double, double> time_attention(int64_t T, int64_t L, int reps) {
  const int64_t D = 512, H = 8, dh = D / H, B = std::max<int64_t>(1, 16384 / T);
  const Device dev = Device::cuda();
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  Generator g(1);
  std::vector<Tensor> q, k;
  for (int64_t l = 0; l < L; ++l) {
    q.push_back(randn({B, H, hkt_level_len(T, l), dh}, {DType::Float32, dev}, &g).set_requires_grad(true));
    k.push_back(randn({B, H, hkt_level_len(T, l), dh}, {DType::Float32, dev}, &g).set_requires_grad(true));
  }
  const Tensor v = randn({B, H, T, dh}, {DType::Float32, dev}, &g).set_requires_grad(true);
  const Tensor lam = full({H, L}, 1.0 / static_cast<double>(L), {DType::Float32, dev}).set_requires_grad(true);
  const Tensor w = randn({B, H, T, dh}, {DType::Float32, dev}, &g);
  const double fwd = time_ms([&] {
    NoGradGuard ng;
    (void)hkt_attention(q, k, v, lam, Tensor(), false, scale);
  }, reps);
  const double both = time_ms([&] { sum(hkt_attention(q, k, v, lam, Tensor(), false, scale) * w).backward(); },
                              reps);
  return {fwd, both};
}

std::string batch(int64_t T) { return std::to_string(std::max<int64_t>(1, 16384 / T)); }

// The default kernels' times per (T, L), for the autotuned rows.
std::map<std::pair<int64_t, int64_t>, std::pair<double, double>> g_default_ms;

void bench_attention(int64_t T, int reps) {
  const int64_t H = 8, dh = 64, B = std::max<int64_t>(1, 16384 / T);
  double mha_both = 0;
  for (int64_t L = 1; L <= 4; ++L) {
    const auto [fwd, both] = time_attention(T, L, reps);
    g_default_ms[{T, L}] = {fwd, both};
    if (L == 1) mha_both = both;
    // Useful FLOPs of MHA: 4 B H T^2 dh forward, 8 B H T^2 dh backward.
    const double flops = 12.0 * static_cast<double>(B * H) * static_cast<double>(T) * static_cast<double>(T) *
                         static_cast<double>(dh);
    char extra[96];
    if (L == 1)
      std::snprintf(extra, sizeof extra, "%.1f TFLOP/s (fwd+bwd, useful)", flops / (both * 1e-3) / 1e12);
    else
      std::snprintf(extra, sizeof extra, "%.2fx MHA", both / mha_both);
    row(std::to_string(T), batch(T), L == 1 ? "MHA" : "HKT L=" + std::to_string(L), "hkt fused", fwd, both, extra);
  }
}

using KnobSet = std::vector<std::pair<const char*, const char*>>;  // a null value: unset

// Sets the knob variables while it lives, then puts back what was there
// (set or not); text() is "A=B C=D" for the table.
class ScopedKnobs {
 public:
  explicit ScopedKnobs(const KnobSet& env) {
    for (const auto& [name, value] : env) {
      const char* old = std::getenv(name);
      saved_.push_back({name, old != nullptr, old ? old : ""});
      if (value) {
        setenv(name, value, 1);
        text_ += std::string(text_.empty() ? "" : " ") + name + "=" + value;
      } else {
        unsetenv(name);
      }
    }
  }
  ~ScopedKnobs() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it)
      it->was_set ? setenv(it->name, it->value.c_str(), 1) : unsetenv(it->name);
  }
  ScopedKnobs(const ScopedKnobs&) = delete;
  ScopedKnobs& operator=(const ScopedKnobs&) = delete;
  const std::string& text() const { return text_; }

 private:
  struct Saved {
    const char* name;
    bool was_set;
    std::string value;
  };
  std::vector<Saved> saved_;
  std::string text_;
};

// The kernel a knob setting names that HKT_CUDA_ATTN_AUTOTUNE_SKIP lists, or ""
// when none is: tools/cuda-lab/gpu-probe lists there the variants whose probe failed
// (a fault would end this process, and every row after it).
std::string skipped_kernel(const KnobSet& env) {
  for (const auto& [name, value] : env) {
    std::string kernel;
    if (!value) continue;
    if (!std::strcmp(name, "HKT_CUDA_ATTN_FWD") || !std::strcmp(name, "HKT_CUDA_ATTN_BWD"))
      kernel = value;
    else if (!std::strcmp(name, "HKT_CUDA_ATTN_BWD_ACC") && !std::strcmp(value, "regs"))
      kernel = "general-regs";
    if (!kernel.empty() && !cuda::autotune_may_try(kernel)) return kernel;
  }
  return "";
}

// The kernel variants a benchmark knob selects, against the default, for MHA
// and HKT L = 3: the register-resident forward and backward
// (HKT_CUDA_ATTN_FWD=mma, mma-async fetching key tiles with cp.async, or
// mma-lean with Q and K plain for 3 blocks per SM;
// HKT_CUDA_ATTN_BWD=mma: attention_fwd_mma.cu,
// attention_bwd_mma.cu), the single-pass backward (HKT_CUDA_ATTN_BWD=fused:
// attention_bwd_fused.cu; fused8 in blocks of 8 warps, fused8-async with
// cp.async) and the general backward's accumulators in registers
// (HKT_CUDA_ATTN_BWD_ACC=regs) instead of shared memory; the mma kernels
// without their L2 prefetches (HKT_CUDA_ATTN_PREFETCH=0); and the forward on
// Hopper's warpgroup products (HKT_CUDA_ATTN_FWD=wgmma, wgmma2; the
// backward, HKT_CUDA_ATTN_BWD=wgmma).
void bench_variants(int reps) {
  struct Knob {
    KnobSet env;
    const char* label;
  };
  const Knob knobs[] = {{{{"HKT_CUDA_ATTN_FWD", "mma"}}, "fwd mma"},
                        {{{"HKT_CUDA_ATTN_FWD", "mma-async"}}, "fwd mma async"},
                        {{{"HKT_CUDA_ATTN_FWD", "mma-lean"}}, "fwd mma lean"},
                        {{{"HKT_CUDA_ATTN_BWD", "mma"}}, "bwd mma"},
                        {{{"HKT_CUDA_ATTN_FWD", "mma"}, {"HKT_CUDA_ATTN_BWD", "mma"}}, "fwd + bwd mma"},
                        {{{"HKT_CUDA_ATTN_BWD", "fused"}}, "bwd fused"},
                        {{{"HKT_CUDA_ATTN_FWD", "mma"}, {"HKT_CUDA_ATTN_BWD", "fused"}}, "fwd mma + bwd fused"},
                        {{{"HKT_CUDA_ATTN_FWD", "mma-async"}, {"HKT_CUDA_ATTN_BWD", "fused"}}, "fwd mma async + bwd fused"},
                        {{{"HKT_CUDA_ATTN_BWD", "fused8"}}, "bwd fused8"},
                        {{{"HKT_CUDA_ATTN_FWD", "mma"}, {"HKT_CUDA_ATTN_BWD", "fused8"}}, "fwd mma + bwd fused8"},
                        {{{"HKT_CUDA_ATTN_BWD", "fused8-async"}}, "bwd fused8 async"},
                        {{{"HKT_CUDA_ATTN_FWD", "mma-async"}, {"HKT_CUDA_ATTN_BWD", "fused8-async"}},
                         "fwd mma async + bwd fused8 async"},
                        {{{"HKT_CUDA_ATTN_FWD", "mma-lean"}, {"HKT_CUDA_ATTN_BWD", "fused"}},
                         "fwd mma lean + bwd fused"},
                        {{{"HKT_CUDA_ATTN_FWD", "mma"},
                          {"HKT_CUDA_ATTN_BWD", "fused"},
                          {"HKT_CUDA_ATTN_PREFETCH", "0"}},
                         "fwd mma + bwd fused, no L2 prefetch"},
                        {{{"HKT_CUDA_ATTN_BWD_ACC", "regs"}}, "bwd acc regs"},
                        // From here on: never run on a GPU yet (2026-12-01), timed after every
                        // row above at every shape, since a fault would end the process.
                        {{{"HKT_CUDA_ATTN_FWD", "wgmma"}}, "fwd wgmma"},
                        {{{"HKT_CUDA_ATTN_FWD", "wgmma2"}}, "fwd wgmma2"},
                        {{{"HKT_CUDA_ATTN_FWD", "wgmma"}, {"HKT_CUDA_ATTN_BWD", "fused8-async"}},
                         "fwd wgmma + bwd fused8 async"},
                        {{{"HKT_CUDA_ATTN_BWD", "wgmma"}}, "bwd wgmma"},
                        {{{"HKT_CUDA_ATTN_FWD", "wgmma"}, {"HKT_CUDA_ATTN_BWD", "wgmma"}}, "fwd + bwd wgmma"}};
  const size_t untried = std::size(knobs) - 5;  // the first of the last five
  for (const bool late : {false, true})
    for (int64_t T : {1024, 4096})
      for (int64_t L : {1, 3}) {
        const std::string what = L == 1 ? "MHA" : "HKT L=3";
        const auto [base_fwd, base_both] = time_attention(T, L, reps);
        for (size_t i = late ? untried : 0; i < (late ? std::size(knobs) : untried); ++i) {
          const Knob& k = knobs[i];
          if (const std::string skip = skipped_kernel(k.env); !skip.empty()) {
            row(std::to_string(T), batch(T), what, k.label, 0, 0,
                "not run: HKT_CUDA_ATTN_AUTOTUNE_SKIP names " + skip + " (tools/cuda-lab/gpu-probe)");
            continue;
          }
          const ScopedKnobs set(k.env);
          const auto [fwd, both] = time_attention(T, L, reps);
          char extra[192];
          std::snprintf(extra, sizeof extra, "%s; default %.2f / %.2f ms: %.2fx / %.2fx", set.text().c_str(),
                        base_fwd, base_both, fwd / base_fwd, both / base_both);
          row(std::to_string(T), batch(T), what, k.label, fwd, both, extra);
        }
      }
}

// With the lab's autotuner on (attention_tune.hpp, the caller's): MHA and
// HKT L = 3 at every T, each shape's kernels chosen by timing every variant on
// its first call (the warm-up, untimed), against the default kernels' rows
// above. Last: the tuner runs the never-measured variants too.
void bench_autotuned(int64_t max_t, int reps) {
  for (int64_t T = 1024; T <= max_t; T *= 2) {
    double mha_both = 0;
    for (int64_t L : {1, 3}) {
      const size_t before = cuda::attention_autotune_results().size();
      const auto [fwd, both] = time_attention(T, L, reps);
      if (L == 1) mha_both = both;
      std::string chosen;
      const std::vector<cuda::TuneResult> c = cuda::attention_autotune_results();
      for (size_t i = before; i < c.size(); ++i)
        chosen += (chosen.empty() ? "" : ", ") + std::string(c[i].key.backward ? "backward" : "forward") + " " +
                  c[i].chosen;
      const auto [dfwd, dboth] = g_default_ms[{T, L}];
      char extra[256], vs_mha[48] = "";
      if (L > 1) std::snprintf(vs_mha, sizeof vs_mha, ", %.2fx MHA autotuned", both / mha_both);
      std::snprintf(extra, sizeof extra, "%s; default %.2f / %.2f ms: %.2fx / %.2fx%s", chosen.c_str(), dfwd, dboth,
                    fwd / dfwd, both / dboth, vs_mha);
      row(std::to_string(T), batch(T), L == 1 ? "MHA" : "HKT L=3", "hkt autotuned", fwd, both, extra);
    }
  }
  // Every decision, each candidate's time: the table's evidence.
  for (const cuda::TuneResult& c : cuda::attention_autotune_results()) {
    std::string line = "hkt-bench-gpu: autotune " + cuda::describe(c.key) + ":";
    for (const cuda::TuneTrial& t : c.trials) {
      char ms[32] = "";
      if (t.ms >= 0) std::snprintf(ms, sizeof ms, " %.2f ms", t.ms);
      line += " " + t.kernel + (t.ms >= 0 ? std::string(ms) : " (" + t.outcome + ")") +
              (t.outcome == "chosen" ? " *" : "") + ";";
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

// --profile: one forward+backward of each attention kernel (MHA and HKT L = 3
// at T = 1024), untimed, for a profiler to read (docs/cuda.md: tools/gpu-session
// runs it under ncu). Every kernel variant runs in one of these seven setups (each at L = 1, then 3: the
// last setups' kernels run last); the
// kernels' names (template arguments included) and their shared memory say
// which variant and shape a profiled launch belongs to.
void profile_kernels() {
  const std::vector<KnobSet> setups = {
      {},
      {{"HKT_CUDA_ATTN_FWD", "mma"}, {"HKT_CUDA_ATTN_BWD", "mma"}},
      {{"HKT_CUDA_ATTN_FWD", "mma-async"}, {"HKT_CUDA_ATTN_BWD", "fused"}},
      {{"HKT_CUDA_ATTN_FWD", "mma-lean"}, {"HKT_CUDA_ATTN_BWD", "fused8"}},
      {{"HKT_CUDA_ATTN_BWD_ACC", "regs"}},
      // last, never run on a GPU before (2026-12-01): a fault would end the process
      {{"HKT_CUDA_ATTN_FWD", "wgmma"}, {"HKT_CUDA_ATTN_BWD", "fused8-async"}},
      {{"HKT_CUDA_ATTN_FWD", "wgmma2"}, {"HKT_CUDA_ATTN_BWD", "wgmma"}}};
  for (const auto& env : setups)
    for (int64_t L : {1, 3}) {
      if (const std::string skip = skipped_kernel(env); !skip.empty()) {
        std::printf("not profiled: HKT_CUDA_ATTN_AUTOTUNE_SKIP names %s (tools/cuda-lab/gpu-probe)\n", skip.c_str());
        continue;
      }
      const ScopedKnobs set(env);
      (void)time_attention(1024, L, 0);  // the warm-up call only: one forward, one forward+backward
      std::printf("profiled: T = 1024, L = %lld, %s\n", static_cast<long long>(L),
                  set.text().empty() ? "defaults" : set.text().c_str());
      std::fflush(stdout);
    }
}

// --probe: one forward+backward of MHA (T = 1000, causal, the second
// sequence's last 37 keys padded) and of HKT L = 3 (T = 1024), with the kernels
// the knobs name, then with the default kernels on the same inputs; prints the
// largest difference of the output and each gradient, relative to the
// default's largest value. Returns 0, or 3 when that is over 1e-4 (the
// accuracy every kernel is tested to). tools/cuda-lab/gpu-probe runs it once per
// kernel variant, each in a process of its own, so that a variant that faults
// ends its own probe only, before the benchmark runs them all in one process.
int probe() {
  const Device dev = Device::cuda();
  const int64_t B = 2, H = 8, dh = 64;
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  const std::string knobs = cuda_attention_kernel_knobs();
  double worst = 0;
  struct Case {
    int64_t T, L;
    bool causal;
  };
  for (const Case c : {Case{1000, 1, true}, Case{1024, 3, false}}) {
    Generator g(11);
    std::vector<Tensor> in;  // q[0..L), k[0..L), v, lambda
    for (int64_t i = 0; i < 2 * c.L; ++i)
      in.push_back(randn({B, H, hkt_level_len(c.T, i % c.L), dh}, {DType::Float32, dev}, &g));
    in.push_back(randn({B, H, c.T, dh}, {DType::Float32, dev}, &g));
    in.push_back(full({H, c.L}, 1.0 / static_cast<double>(c.L), {DType::Float32, dev}));
    const Tensor w = randn({B, H, c.T, dh}, {DType::Float32, dev}, &g);
    Tensor valid;
    if (c.L == 1) {
      std::vector<int64_t> ok(static_cast<size_t>(B * c.T), 1);
      std::fill(ok.end() - 37, ok.end(), 0);
      valid = to_device(gt(from_vector(ok, {B, c.T}), 0), dev);
    }
    const auto run = [&] {  // the output, then every gradient, on the host
      std::vector<Tensor> x;
      for (const Tensor& t : in) x.push_back(t.detach().set_requires_grad(true));
      const std::vector<Tensor> q(x.begin(), x.begin() + c.L), k(x.begin() + c.L, x.begin() + 2 * c.L);
      const Tensor o = hkt_attention(q, k, x[size_t(2 * c.L)], x[size_t(2 * c.L + 1)], valid, c.causal, scale);
      sum(o * w).backward();
      std::vector<std::vector<float>> r{to_device(o, Device::cpu()).to_vector<float>()};
      for (const Tensor& t : x) r.push_back(to_device(t.grad(), Device::cpu()).to_vector<float>());
      return r;
    };
    const std::vector<std::vector<float>> got = run();
    const std::vector<std::vector<float>> ref = [&] {
      const ScopedKnobs defaults({{"HKT_CUDA_ATTN_FWD", nullptr}, {"HKT_CUDA_ATTN_BWD", nullptr},
                                  {"HKT_CUDA_ATTN_BWD_ACC", nullptr}});
      return run();
    }();
    double rel = 0;
    for (size_t t = 0; t < got.size(); ++t) {
      double diff = 0, big = 0;
      for (size_t i = 0; i < got[t].size(); ++i) {
        diff = std::max(diff, std::abs(double(got[t][i]) - double(ref[t][i])));
        big = std::max(big, std::abs(double(ref[t][i])));
        if (!std::isfinite(got[t][i])) diff = INFINITY;
      }
      rel = std::max(rel, diff / std::max(big, 1e-6));
    }
    worst = std::max(worst, rel);
    std::printf("hkt-bench-gpu: probe %s, T = %lld, L = %lld%s: ran; largest difference from the default kernels "
                "%.2e (relative)\n",
                knobs.empty() ? "defaults" : knobs.c_str(), static_cast<long long>(c.T),
                static_cast<long long>(c.L), c.causal ? ", causal, padded" : "", rel);
    std::fflush(stdout);
  }
  return worst <= 1e-4 ? 0 : 3;
}

// One training step of hkt-small: forward, cross-entropy, backward, AdamW;
// with `as_trainer`, hkt-train's step (tasks/src/train_step.cpp): the loss read
// on the host and the gradients clipped to norm 1 as well, whose waits for
// the GPU hkt-bench-launches counts (docs/cuda.md, "Host work per training step").
void bench_train_step(int reps, const char* impl = "hkt", bool as_trainer = false) {
  nn::ClassifierConfig cfg = nn::ClassifierConfig::preset("hkt-small");
  const int64_t B = 32, T = 512;
  cfg.vocab = 20;
  cfg.classes = 10;
  cfg.max_len = T;
  Generator g(2);
  nn::SequenceClassifier model(cfg, &g);
  model.to(Device::cuda());
  model.train();
  nn::AdamW opt(nn::decay_groups(model, 1e-4, 0.01));
  const Tensor x = to_device(to_dtype(mul(rand({B, T}, {}, &g), 19.99), DType::Int64), Device::cuda());
  const Tensor y = to_device(to_dtype(mul(rand({B}, {}, &g), 9.99), DType::Int64), Device::cuda());
  const std::vector<Tensor> params = model.parameters();
  double seen = 0;
  const double ms = time_ms([&] {
    const Tensor loss = cross_entropy(model.forward(x), y);
    if (as_trainer) seen += loss.item_double();
    opt.zero_grad();
    loss.backward();
    if (as_trainer) seen += nn::clip_grad_norm_(params, 1.0);
    opt.step();
  }, reps);
  row(std::to_string(T), std::to_string(B), as_trainer ? "hkt-small hkt-train step" : "hkt-small train step", impl,
      0, ms,
      std::to_string(model.num_parameters()) +
          (as_trainer ? " params, fwd+bwd+clip+AdamW, loss and norm read" : " params, fwd+bwd+AdamW") +
          (std::isfinite(seen) ? "" : " (non-finite loss or norm)"));
}

}  // namespace

// A positive integer option value, else exit 2 naming the option.
static int64_t positive(const char* v, const char* name) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < 1 || x > (int64_t{1} << 30)) {
    std::fprintf(stderr, "hkt-bench-gpu: %s: expected a positive integer, got '%s'\n", name, v);
    std::exit(2);
  }
  return x;
}

int main(int argc, char** argv) {
  hkt::cuda::install_lab_variants();
  int reps = 3;
  int64_t max_t = 16384;
  bool profile = false, probe_only = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) max_t = 2048, reps = 2;
    else if (!std::strcmp(argv[i], "--profile")) profile = true;
    else if (!std::strcmp(argv[i], "--probe")) probe_only = true;
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = static_cast<int>(positive(argv[++i], "--reps"));
    else if (!std::strcmp(argv[i], "--max-t") && i + 1 < argc) max_t = positive(argv[++i], "--max-t");
    else {
      const bool help = !std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h");
      std::fprintf(help ? stdout : stderr,
                   "usage: hkt-bench-gpu [--quick] [--reps N] [--max-t T] [--profile | --probe]\n");
      return help ? 0 : 2;
    }
  }
  if (!cuda_is_available()) {
    std::printf("hkt-bench-gpu: SKIPPED, no GPU: %s\n", cuda_unavailable_reason().c_str());
    return probe_only ? 77 : 0;  // a probe that did not run did not pass
  }
  try {
    if (profile) {
      profile_kernels();
      return 0;
    }
    if (probe_only) return probe();
    // Asked before the variant rows, which set and unset the knob variables.
    const std::string knobs = cuda_attention_kernel_knobs();
    std::printf("| T | B | what | impl | fwd ms | fwd+bwd ms | notes |\n|--:|--:|---|---|--:|--:|---|\n");
    for (int64_t T = 1024; T <= max_t; T *= 2) bench_attention(T, reps);
    bench_train_step(reps);
    bench_train_step(reps, "hkt", true);
    if (!knobs.empty()) {
      // The table above is the knobs' (tools/gpu-session's knob stages); variant rows would
      // mix the caller's knobs with their own, and the tuner does not run where knobs are set.
      std::fprintf(stderr, "hkt-bench-gpu: the knobs name the kernels (%s): no variant or autotuned rows\n",
                   knobs.c_str());
    } else {
      bench_variants(reps);
      const int previous = cuda::attention_autotune_setting();
      cuda::set_attention_autotune(1);
      bench_autotuned(max_t, reps);
      bench_train_step(reps, "hkt autotuned");  // its attention kernels tuned on the warm-up step
      cuda::set_attention_autotune(previous);
    }
    const CudaMemoryStats m = cuda_memory_stats();
    std::fprintf(stderr, "hkt-bench-gpu: peak device memory %.1f MiB, %llu cudaMalloc calls, %llu cache hits\n",
                 static_cast<double>(m.peak_allocated_bytes) / (1 << 20),
                 static_cast<unsigned long long>(m.device_mallocs), static_cast<unsigned long long>(m.cache_hits));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hkt-bench-gpu: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
