// hkt-bench-attention: the fused attention op (hkt_attention) against the
// composite reference built from plain ops, printed as a markdown table.
//
// For T in {512, 1024, 2048, 4096} (and 8192 with --full), D = 128, H = 4
// (dh = 32), B = 1, bidirectional: forward and forward+backward time of
//   MHA      fused, L = 1 (lambda = 1)
//   HKT L    fused, L = 2..4
//   and the composite versions (forms T x T scores) where T <= 2048,
// the HKT / MHA time ratio (same implementation), GFLOP/s of fused MHA on
// useful FLOPs (4 B H T^2 dh forward, twice that backward), and the peak
// resident memory of each run. A causal MHA / HKT L = 3 row is added per T.
//
// Each configuration runs in a fresh child process (this executable with
// --one ...) so that its peak RSS (VmHWM) is its own. Times: best of a few
// calls after a warm-up. The sgemm reference (cblas_sgemm, 1024^3 and the
// T x T x dh shape of Q K^T) runs in a child too.
//
//   hkt-bench-attention [--full] [--quick]
//   hkt-bench-attention --one <fused|composite> T L causal   (one run; prints one line)
//   hkt-bench-attention --sgemm M N K                             (OpenBLAS's cblas_sgemm; GFLOP/s)
//   hkt-bench-attention --matmul M N K [TA TB]                    (the library's float32 product; GFLOP/s)
//   hkt-bench-attention --step <preset> T B reps                  (one training step; "step_s peak_mib")
//   HKT_PROFILE=1 hkt-bench-attention --step ...   also prints the op profile of `reps` steps (stderr)
//   hkt-bench-attention --curves [--max-t N] [--rounds R] [--csv FILE] [--kinds K,K,...] [--no-steps]
//       cost curves of every attention kind (docs/performance.md): forward+backward time and peak RSS of
//       MHA, HKT L = 3, local (w = 64), Performer (FAVOR+, m = 256), Performer (elu+1) and
//       H-Transformer-1D (Nr = 16) at B = 1, H = 4, dh = 32, T = 512, 1024, ... N (16384 by default),
//       bidirectional; the kinds alternate, R rounds (3), medians; the useful GFLOP/s of each kind on
//       its own counted FLOPs (counted_fwd_flops, x 3 for fwd+bwd) and its ratio to MHA's. --kinds
//       picks the kinds (MHA is always run, first). Then (unless --no-steps) one training step per
//       preset (hkt-small, mha-matched, local-small, performer-small, htr-small) at T = 1024 and
//       4096, B = 2, R alternating rounds, medians.
//   hkt-bench-attention --kind <mha|hkt3|local|local-causal|performer|elu1|htr> T reps [B]
//       one run at batch B (1); prints "fwd_s fwdbwd_s peak_mib"
//
// After the kernel table it times one training step of hkt-small and
// mha-small at T = 1024, B = 8, five alternating pairs of runs (two with
// --quick), reporting the medians and the range of the pairs' ratios (with
// --full also B = 1 at T = 1024 .. 8192, for the growth of peak memory with T).
#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "hkt/core/grad_mode.hpp"
#include "hkt/core/profiler.hpp"
#include "bench_util.hpp"
#include "hkt/ops/attention.hpp"
#include "hkt/ops/htransformer.hpp"
#include "hkt/ops/elementwise.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/ops/index.hpp"
#include "hkt/ops/linalg.hpp"
#include "hkt/ops/linear_attention.hpp"
#include "hkt/ops/local_attention.hpp"
#include "hkt/ops/nn.hpp"
#include "hkt/ops/reduce.hpp"
#include "hkt/ops/view.hpp"
#include "hkt/models/classifier.hpp"
#include "hkt/models/composite_attention.hpp"
#include "hkt/models/optim.hpp"

namespace {

using namespace hkt;
using hkt::nn::composite_attention;
using Clock = std::chrono::steady_clock;

constexpr int64_t kB = 1, kH = 4, kD = 128, kDh = kD / kH;

double seconds_of(const auto& f) {
  const auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Best of at least `reps` timed calls after one warm-up, and of as many more
// as fit in 0.25 s (a call of a few ms is noisy: one page fault or one
// preempted thread doubles it); fewer when a call is slow.
double best_time(const auto& f, int reps) {
  const double first = seconds_of(f);
  if (first > 5.0) return first;
  double best = std::numeric_limits<double>::infinity(), spent = 0;
  const int n = first > 1.0 ? 2 : reps;
  for (int r = 0; r < n || (spent < 0.25 && r < 1000); ++r) {
    const double t = seconds_of(f);
    best = std::min(best, t), spent += t;
  }
  return best;
}

// Peak resident memory of this process in MiB (VmHWM).
double peak_rss_mib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  return -1;
}

// Best-of-reps time of fwd() without gradients and of its forward + backward
// (the backward seeded with the output gradient w, no other op timed); prints
// "fwd_s fwdbwd_s peak_mib". Each backward starts with the leaves' gradients
// cleared, as a training step after zero_grad does: the leaves take their
// gradients without an add (a left-over gradient would cost one add per leaf,
// a few per cent of the cheap kinds' time at large T).
int print_times(const std::function<Tensor()>& fwd, const Tensor& w, int reps, std::vector<Tensor> leaves) {
  const double t_fwd = best_time(
      [&] {
        NoGradGuard ng;
        (void)fwd();
      },
      reps);
  const double t_all = best_time(
      [&] {
        for (Tensor& t : leaves) t.set_grad(Tensor());
        fwd().backward(w);
      },
      reps);
  std::printf("%.6f %.6f %.1f\n", t_fwd, t_all, peak_rss_mib());
  return 0;
}

// One configuration: prints "fwd_s fwdbwd_s peak_mib".
int run_one(bool fused, int64_t T, int64_t L, bool causal, int reps) {
  manual_seed(1);
  std::vector<Tensor> q, k;
  for (int64_t l = 0; l < L; ++l) {
    q.push_back(randn({kB, kH, hkt_level_len(T, l), kDh}).set_requires_grad(true));
    k.push_back(randn({kB, kH, hkt_level_len(T, l), kDh}).set_requires_grad(true));
  }
  const Tensor v = randn({kB, kH, T, kDh}).set_requires_grad(true);
  const Tensor lam = full({kH, L}, 1.0 / static_cast<double>(L)).set_requires_grad(true);
  const Tensor w = randn({kB, kH, T, kDh});
  const double scale = 1.0 / std::sqrt(static_cast<double>(kDh));
  auto fwd = [&] {
    return fused ? hkt_attention(q, k, v, lam, Tensor(), causal, scale) : composite_attention(q, k, v, lam, Tensor(), causal, scale);
  };
  std::vector<Tensor> leaves(q.begin(), q.end());
  leaves.insert(leaves.end(), k.begin(), k.end());
  leaves.push_back(v), leaves.push_back(lam);
  return print_times(fwd, w, reps, leaves);
}

// One attention kind at length T (batch B, 1 by default; H = 4, dh = 32, bidirectional): prints
// "fwd_s fwdbwd_s peak_mib". Local: w = 64; Performer: m = 256 features (performer-small's);
// H-Transformer-1D: Nr = 16 with its relative-position bias (htr-small's defaults).
int run_kind(const std::string& kind, int64_t T, int reps, int64_t B = kB) {
  manual_seed(1);
  const Shape s{B, kH, T, kDh};
  const Tensor q = randn(s).set_requires_grad(true), k = randn(s).set_requires_grad(true);
  const Tensor v = randn(s).set_requires_grad(true), w = randn(s);
  const double scale = 1.0 / std::sqrt(static_cast<double>(kDh));
  const Tensor feats = orthogonal_features(256, kDh, 7);
  const Tensor htr_bias = (0.1 * randn({kH, 4 * 16 - 1})).set_requires_grad(true);
  std::vector<Tensor> q3, k3;
  for (int64_t l = 0; l < 3; ++l) {
    q3.push_back(l == 0 ? q : randn({B, kH, hkt_level_len(T, l), kDh}).set_requires_grad(true));
    k3.push_back(l == 0 ? k : randn({B, kH, hkt_level_len(T, l), kDh}).set_requires_grad(true));
  }
  const Tensor lam = full({kH, 3}, 1.0 / 3).set_requires_grad(true);
  std::function<Tensor()> fwd;
  if (kind == "mha") fwd = [&] { return mha_attention(q, k, v, Tensor(), false, scale); };
  else if (kind == "hkt3") fwd = [&] { return hkt_attention(q3, k3, v, lam, Tensor(), false, scale); };
  else if (kind == "local") fwd = [&] { return local_attention(q, k, v, Tensor(), 64, false, scale); };
  else if (kind == "local-causal") fwd = [&] { return local_attention(q, k, v, Tensor(), 64, true, scale); };
  else if (kind == "performer")
    fwd = [&] { return linear_attention(favor_features(q, feats, true), favor_features(k, feats, false), v, Tensor(), false); };
  else if (kind == "htr") fwd = [&] { return htransformer_attention(q, k, v, Tensor(), false, scale, 16, htr_bias); };
  else if (kind == "elu1") fwd = [&] { return linear_attention(elu1_features(q), elu1_features(k), v, Tensor(), false); };
  else {
    std::fprintf(stderr, "hkt-bench-attention: unknown kind '%s' (mha, hkt3, local, local-causal, performer, elu1, htr)\n", kind.c_str());
    return 2;
  }
  std::vector<Tensor> leaves{q, k, v, htr_bias, lam};
  for (int64_t l = 1; l < 3; ++l) leaves.push_back(q3[l]), leaves.push_back(k3[l]);
  return print_times(fwd, w, reps, leaves);
}

// One training step of a classifier preset at length T, batch B (token
// inputs, vocab 256, 10 classes, dropout on): forward, cross-entropy,
// backward, clipping, AdamW. Prints "step_s peak_mib".
int run_step(const std::string& preset, int64_t T, int64_t B, int reps) {
  manual_seed(1);
  nn::SequenceClassifier model(bench::step_config(preset, T));
  model.train();
  nn::AdamW opt(model.parameters(), 1e-3);
  std::vector<int64_t> tok(static_cast<size_t>(B * T)), lab(static_cast<size_t>(B));
  for (size_t i = 0; i < tok.size(); ++i) tok[i] = static_cast<int64_t>((i * 2654435761u) % 256);
  for (size_t i = 0; i < lab.size(); ++i) lab[i] = static_cast<int64_t>(i % 10);
  const Tensor x = from_vector(tok, {B, T}), y = from_vector(lab, {B});
  auto step = [&] {
    opt.zero_grad();
    cross_entropy(model.forward(x), y).backward();
    nn::clip_grad_norm_(model.parameters(), 1.0);
    opt.step();
  };
  if (profiler::enabled()) {
    // HKT_PROFILE=1: the op table (printed at exit) covers `reps` steps after a warm-up.
    step();
    profiler::reset();
    for (int r = 0; r < reps; ++r) step();
    profiler::enable(false);
    std::fprintf(stderr, "%s, T = %lld, B = %lld: the profile below covers %d steps\n", preset.c_str(),
                 static_cast<long long>(T), static_cast<long long>(B), reps);
  }
  const double t = best_time(step, reps);
  std::printf("%.6f %.1f\n", t, peak_rss_mib());
  return 0;
}

// hkt-small / mha-small FLOPs of all products (nn::model_flops), as run_step configures them.
double step_flop_ratio(int64_t T, int64_t B) {
  auto flops = [&](const char* preset) { return nn::model_flops(bench::step_config(preset, T), B, T).total(); };
  return flops("hkt-small") / flops("mha-small");
}

int run_sgemm(int m, int n, int kd) {
  std::vector<float> a(static_cast<size_t>(m) * kd, 0.5f), b(static_cast<size_t>(kd) * n, 0.25f),
      c(static_cast<size_t>(m) * n);
  const double t = best_time(
      [&] { cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, kd, 1.0f, a.data(), kd, b.data(), kd, 0.0f,
                        c.data(), n); },
      5);
  std::printf("%.3f\n", 2.0 * m * n * kd / t * 1e-9);
  return 0;
}

// --matmul M N K [TA TB]: the library's float32 product op(A)[M, K] op(B)[K, N] (hkt::matmul; TA /
// TB 1: that operand stored transposed, as a linear layer's weight is), best of 5 after a warm-up;
// prints GFLOP/s. HKT_SGEMM=blas runs it in OpenBLAS instead of the library's own kernel.
int run_matmul(int64_t m, int64_t n, int64_t kd, bool ta, bool tb) {
  manual_seed(1);
  const Tensor a = ta ? transpose(randn({kd, m}), 0, 1) : randn({m, kd});
  const Tensor b = tb ? transpose(randn({n, kd}), 0, 1) : randn({kd, n});
  NoGradGuard ng;
  (void)matmul(a, b);
  const double t = best_time([&] { (void)matmul(a, b); }, 5);
  std::printf("%.3f\n", 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(kd) / t * 1e-9);
  return 0;
}

struct Result {
  bool ok = false;
  double fwd = 0, all = 0, mib = 0;
};

std::string self_exe() { return bench::self_exe("hkt-bench-attention"); }

std::string run_child(const std::string& args) {
  std::string cmd = "'";
  cmd.append(self_exe());
  cmd.append("' ");
  cmd.append(args);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "";
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof(buf), p)) out += buf;
  pclose(p);
  return out;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

Result child(bool fused, int64_t T, int64_t L, bool causal, int reps) {
  const std::string out = run_child(std::string("--one ") + (fused ? "fused " : "composite ") + std::to_string(T) +
                                    " " + std::to_string(L) + " " + (causal ? "1" : "0") + " " +
                                    std::to_string(reps));
  Result r;
  r.ok = std::sscanf(out.c_str(), "%lf %lf %lf", &r.fwd, &r.all, &r.mib) == 3;
  return r;
}

void row(const char* impl, const char* variant, int64_t T, const Result& r, const Result& mha, double useful) {
  if (!r.ok) {
    std::printf("| %lld | %s | %s | failed | | | | |\n", static_cast<long long>(T), variant, impl);
    return;
  }
  char gf[64] = "";
  if (useful > 0) std::snprintf(gf, sizeof gf, "%.1f", useful / r.all * 1e-9);
  std::printf("| %lld | %s | %s | %.1f | %.1f | %.2f | %s | %.0f |\n", static_cast<long long>(T), variant, impl,
              r.fwd * 1e3, r.all * 1e3, mha.ok ? r.all / mha.all : 0.0, gf, r.mib);
  std::fflush(stdout);
}

using bench::median_of;

// The counted forward FLOPs of one kind at length T as run_kind configures it (the products
// over the (query, key) pairs a kind computes, q.k and weight times v: 4 dh per pair per head;
// nn::model_flops counts the same): MHA T^2 pairs, HKT L = 3 the scores of its levels
// (nn::score_flops) and P V over the T^2 fine pairs, local (w = 64) the visible pairs, H-Transformer-1D
// (Nr = 16) the scores of its published layout (htransformer_score_count). 0 for the
// Performers, whose products are not over pairs.
double counted_fwd_flops(const std::string& kind, int64_t T) {
  const double bhd = static_cast<double>(kB * kH * kDh);
  if (kind == "mha") return 4.0 * bhd * static_cast<double>(T) * static_cast<double>(T);
  if (kind == "hkt3")  // every level's scores, and P V on the fine map only
    return nn::score_flops(kB, T, kH * kDh, kH, 3).total + 2.0 * bhd * static_cast<double>(T) * static_cast<double>(T);
  if (kind == "local") {
    double pairs = 0;
    for (int64_t i = 0; i < T; ++i) pairs += static_cast<double>(std::min(T - 1, i + 64) - std::max<int64_t>(0, i - 64) + 1);
    return 4.0 * bhd * pairs;
  }
  if (kind == "htr") return 4.0 * bhd * static_cast<double>(htransformer_score_count(T, 16, false));
  return 0.0;
}

// --curves: the cost curves of every kind and a training step per preset (see the header).
int run_curves(int64_t max_t, int rounds, const std::string& csv, std::vector<std::string> kinds, bool steps) {
  if (kinds.empty()) kinds = {"mha", "hkt3", "local", "performer", "elu1", "htr"};
  if (kinds[0] != "mha") kinds.insert(kinds.begin(), "mha");  // the baseline of the ratios
  std::FILE* out = csv.empty() ? nullptr : std::fopen(csv.c_str(), "w");
  if (!csv.empty() && !out) {
    std::fprintf(stderr, "hkt-bench-attention: cannot write '%s'\n", csv.c_str());
    return 1;
  }
  if (out) std::fprintf(out, "T,kind,fwd_ms,fwdbwd_ms,peak_mib,gflops_useful\n");
  std::printf("## cost curves: B = %lld, H = %lld, dh = %lld, float32, bidirectional, forward + backward; "
              "local w = 64, Performer m = 256, H-Transformer-1D Nr = 16 with its bias; median of %d alternating rounds\n\n",
              static_cast<long long>(kB), static_cast<long long>(kH), static_cast<long long>(kDh), rounds);
  std::printf("GFLOP/s (useful): 3 x the kind's counted forward FLOPs (counted_fwd_flops) / fwd+bwd time; "
              "/ MHA: its ratio to MHA's in the same rounds\n\n");
  std::printf("| T | kind | fwd ms | fwd+bwd ms | / MHA (fwd+bwd) | GFLOP/s (useful) | / MHA GFLOP/s | peak RSS MiB |\n"
              "|--:|------|--:|--:|--:|--:|--:|--:|\n");
  for (int64_t T = 512; T <= max_t; T *= 2) {
    std::vector<std::vector<double>> f(kinds.size()), a(kinds.size()), m(kinds.size());
    for (int r = 0; r < rounds; ++r)
      for (size_t i = 0; i < kinds.size(); ++i) {
        const std::string o = run_child("--kind " + kinds[i] + " " + std::to_string(T) + " 2");
        double x = 0, y = 0, z = 0;
        if (std::sscanf(o.c_str(), "%lf %lf %lf", &x, &y, &z) != 3) continue;
        f[i].push_back(x), a[i].push_back(y), m[i].push_back(z);
      }
    const double mha = median_of(a[0]);
    // useful GFLOP/s from a fwd+bwd time in ms (0: not counted or failed)
    auto gflops = [&](size_t i, double ms) { return ms > 0 ? 3.0 * counted_fwd_flops(kinds[i], T) / ms * 1e-6 : 0.0; };
    const double mha_gf = gflops(0, mha * 1e3);
    for (size_t i = 0; i < kinds.size(); ++i) {
      if (a[i].empty()) {
        std::printf("| %lld | %s | failed | | | | | |\n", static_cast<long long>(T), kinds[i].c_str());
        continue;
      }
      const double fw = median_of(f[i]) * 1e3, al = median_of(a[i]) * 1e3, mib = median_of(m[i]), gf = gflops(i, al);
      char gfs[64] = "", rel[64] = "";
      if (gf > 0) std::snprintf(gfs, sizeof gfs, "%.1f", gf);
      if (gf > 0 && mha_gf > 0) std::snprintf(rel, sizeof rel, "%.2f", gf / mha_gf);
      std::printf("| %lld | %s | %.1f | %.1f | %.2f | %s | %s | %.0f |\n", static_cast<long long>(T), kinds[i].c_str(), fw,
                  al, mha > 0 ? al / (mha * 1e3) : 0.0, gfs, rel, mib);
      if (out)
        std::fprintf(out, "%lld,%s,%.3f,%.3f,%.1f,%.3f\n", static_cast<long long>(T), kinds[i].c_str(), fw, al, mib, gf);
      std::fflush(stdout);
    }
  }
  if (out) std::fclose(out);
  if (!steps) return 0;
  const std::vector<std::string> presets{"hkt-small", "mha-matched", "local-small", "performer-small", "htr-small"};
  std::printf("\n## training step per preset: B = 2, vocab 256, 10 classes, forward + cross-entropy + backward + clip + "
              "AdamW; median of %d alternating rounds\n\n| T | preset | step ms | / mha-matched | peak RSS MiB |\n"
              "|--:|--------|--:|--:|--:|\n", rounds);
  for (int64_t T : {1024, 4096}) {
    std::vector<std::vector<double>> t(presets.size()), m(presets.size());
    for (int r = 0; r < rounds; ++r)
      for (size_t i = 0; i < presets.size(); ++i) {
        double x = 0, z = 0;
        if (std::sscanf(run_child("--step " + presets[i] + " " + std::to_string(T) + " 2 1").c_str(), "%lf %lf", &x,
                        &z) == 2)
          t[i].push_back(x), m[i].push_back(z);
      }
    const double base = median_of(t[1]);
    for (size_t i = 0; i < presets.size(); ++i) {
      if (t[i].empty()) {
        std::printf("| %lld | %s | failed | | |\n", static_cast<long long>(T), presets[i].c_str());
        continue;
      }
      std::printf("| %lld | %s | %.0f | %.2f | %.0f |\n", static_cast<long long>(T), presets[i].c_str(),
                  median_of(t[i]) * 1e3, base > 0 ? median_of(t[i]) / base : 0.0, median_of(m[i]));
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--kind") == 0 && (argc == 5 || argc == 6))
    return run_kind(argv[2], std::atoll(argv[3]), std::atoi(argv[4]), argc == 6 ? std::atoll(argv[5]) : kB);
  if (argc >= 2 && std::strcmp(argv[1], "--curves") == 0) {
    int64_t max_t = 16384;
    int rounds = 3;
    std::string csv;
    std::vector<std::string> kinds;
    bool steps = true;
    for (int i = 2; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--max-t" && i + 1 < argc) max_t = std::atoll(argv[++i]);
      else if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
      else if (a == "--csv" && i + 1 < argc) csv = argv[++i];
      else if (a == "--kinds" && i + 1 < argc) {
        const std::string list = argv[++i];
        for (size_t b = 0; b <= list.size();) {
          const size_t e = std::min(list.find(',', b), list.size());
          if (e > b) kinds.push_back(list.substr(b, e - b));
          b = e + 1;
        }
      } else if (a == "--no-steps") steps = false;
      else {
        std::fprintf(stderr, "usage: %s --curves [--max-t N] [--rounds R] [--csv FILE] [--kinds K,K,...] [--no-steps]\n",
                     argv[0]);
        return 2;
      }
    }
    if (max_t < 512 || rounds < 1) {
      std::fprintf(stderr, "hkt-bench-attention: --max-t must be >= 512 and --rounds >= 1\n");
      return 2;
    }
    return run_curves(max_t, rounds, csv, kinds, steps);
  }
  if (argc >= 2 && std::strcmp(argv[1], "--one") == 0 && argc == 7)
    return run_one(std::strcmp(argv[2], "fused") == 0, std::atoll(argv[3]), std::atoll(argv[4]),
                   std::atoi(argv[5]) != 0, std::atoi(argv[6]));
  if (argc >= 2 && std::strcmp(argv[1], "--step") == 0 && argc == 6)
    return run_step(argv[2], std::atoll(argv[3]), std::atoll(argv[4]), std::atoi(argv[5]));
  if (argc >= 2 && std::strcmp(argv[1], "--matmul") == 0 && (argc == 5 || argc == 7))
    return run_matmul(std::atoll(argv[2]), std::atoll(argv[3]), std::atoll(argv[4]), argc == 7 && std::atoi(argv[5]) != 0,
                      argc == 7 && std::atoi(argv[6]) != 0);
  if (argc >= 2 && std::strcmp(argv[1], "--sgemm") == 0 && argc == 5)
    return run_sgemm(std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]));
  bool full = false, quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--full") == 0) full = true;
    else if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    else {
      const bool help = std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0;
      std::fprintf(help ? stdout : stderr,
                   "usage: %s [--full] [--quick]\n  --full   add T = 8192 and training steps at T = 1024 .. 8192\n  --quick  T = 512, 1024 only, fewer "
                   "repetitions\n"
                   "       %s --curves [--max-t N] [--rounds R] [--csv FILE] [--kinds K,K,...] [--no-steps]\n"
                   "       %s --kind <mha|hkt3|local|local-causal|performer|elu1|htr> T reps [B]\n"
                   "       %s --step <preset> T B reps | --one <fused|composite> T L causal reps | --sgemm M N K\n"
                   "       %s --matmul M N K [TA TB]\n",
                   argv[0], argv[0], argv[0], argv[0], argv[0]);
      return help ? 0 : 2;
    }
  }
  const int reps = quick ? 2 : 3;
  std::vector<int64_t> Ts{512, 1024, 2048, 4096};
  if (quick) Ts = {512, 1024};
  if (full) Ts.push_back(8192);

  std::printf("## fused attention: B = %lld, H = %lld, D = %lld (dh = %lld), float32, bidirectional unless noted\n\n",
              static_cast<long long>(kB), static_cast<long long>(kH), static_cast<long long>(kD),
              static_cast<long long>(kDh));
  std::printf("sgemm reference (cblas_sgemm, its own threads): 1024x1024x1024 %s GFLOP/s\n\n",
              trimmed(run_child("--sgemm 1024 1024 1024")).c_str());
  std::printf("| T | variant | impl | fwd ms | fwd+bwd ms | / MHA (fwd+bwd) | GFLOP/s (useful) | peak RSS MiB |\n");
  std::printf("|--:|---------|------|-------:|-----------:|----------------:|-----------------:|-------------:|\n");
  for (int64_t T : Ts) {
    const double Td = static_cast<double>(T);
    // Useful FLOPs of MHA: 4 B H T^2 dh forward, 8 B H T^2 dh backward.
    const double useful = 12.0 * kB * kH * Td * Td * kDh;
    for (int impl = 0; impl < 2; ++impl) {
      const bool fused = impl == 0;
      if (!fused && T > 2048) continue;
      const char* name = fused ? "fused" : "composite";
      const Result mha = child(fused, T, 1, false, reps);
      row(name, "MHA", T, mha, mha, fused ? useful : 0);
      for (int64_t L = 2; L <= 4; ++L) {
        const std::string v = "HKT L=" + std::to_string(L);
        row(name, v.c_str(), T, child(fused, T, L, false, reps), mha, 0);
      }
      const Result cm = child(fused, T, 1, true, reps);
      row(name, "MHA causal", T, cm, cm, fused ? useful / 2 : 0);
      row(name, "HKT L=3 causal", T, child(fused, T, 3, true, reps), cm, 0);
    }
    const std::string sg = trimmed(run_child("--sgemm " + std::to_string(T) + " " + std::to_string(T) + " " +
                                             std::to_string(kDh)));
    std::printf("| %lld | sgemm T x T x dh | cblas | | | | %s | |\n", static_cast<long long>(T), sg.c_str());
  }
  std::printf("\nfwd+bwd of a causal row is divided by the causal MHA row; useful FLOPs are halved when causal.\n");

  // Whole training steps of the presets (fused attention, dropout on).
  std::printf("\n## training step: hkt-small (L = 3) vs mha-small, forward + cross-entropy + backward + clip + "
              "AdamW, vocab 256, 10 classes\n\n");
  // The VM's timing drifts by +-10% between runs: the B = 8 row alternates `pairs` runs of the two
  // presets and reports the medians and the median and range of the pairs' ratios.
  std::printf("| T | B | pairs | hkt-small ms | mha-small ms | hkt / mha (median of pairs) | range of pairs | FLOP ratio | "
              "hkt peak RSS MiB | mha peak RSS MiB |\n");
  std::printf("|--:|--:|--:|-------------:|-------------:|----------:|------|-----------:|-----------------:|-----------------:|\n");
  std::vector<std::pair<int64_t, int64_t>> steps{{1024, 8}};
  if (full)
    for (int64_t T : {1024, 2048, 4096, 8192}) steps.emplace_back(T, 1);  // memory against T
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  for (const auto& [T, B] : steps) {
    const int pairs = B == 8 ? (quick ? 2 : 5) : 1;
    std::vector<double> th, tm, ratio;
    double mh = 0, mm = 0;
    char args[64];  // (a std::string sum here trips GCC 12's -Wrestrict false positive)
    std::snprintf(args, sizeof args, " %lld %lld %d", static_cast<long long>(T), static_cast<long long>(B),
                  quick ? 1 : 2);
    bool ok = true;
    for (int i = 0; i < pairs && ok; ++i) {
      double a = 0, b = 0;
      ok = std::sscanf(run_child(std::string("--step hkt-small") + args).c_str(), "%lf %lf", &a, &mh) == 2 &&
           std::sscanf(run_child(std::string("--step mha-small") + args).c_str(), "%lf %lf", &b, &mm) == 2;
      if (!ok) break;
      th.push_back(a);
      tm.push_back(b);
      ratio.push_back(a / b);
    }
    if (!ok) {
      std::printf("| %lld | %lld | | failed | | | | | | |\n", static_cast<long long>(T), static_cast<long long>(B));
      continue;
    }
    std::printf("| %lld | %lld | %d | %.0f | %.0f | %.3f | %.3f-%.3f | %.3f | %.0f | %.0f |\n",
                static_cast<long long>(T), static_cast<long long>(B), pairs, median(th) * 1e3, median(tm) * 1e3,
                median(ratio), *std::min_element(ratio.begin(), ratio.end()),
                *std::max_element(ratio.begin(), ratio.end()), step_flop_ratio(T, B), mh, mm);
    std::fflush(stdout);
  }
  return 0;
}
