// hkt-bench-launches: what one training step of hkt-train asks of a CUDA
// device, counted on the emulated device (tests/cuda_emu; no GPU needed).
//
// On a GPU a small model's step is bound by the host: each kernel launch,
// cuBLAS call, copy and memset costs the host a few microseconds, and each
// copy to the host also waits until the GPU has done everything queued
// before it, so that the GPU then idles while the host queues the next
// work. These counts are what a step costs in that currency; they depend on
// the model and the code, not on B or T (the emulator runs the kernels on
// the CPU, so it runs small shapes: B = 2, T = 16 at the presets' widths).
//
// Each model's figures are the difference between tasks::train runs of
// 2 + N and 2 steps (evaluation and checkpoints only at the end, the same in
// both), divided by N: the trainer's own step (forward, loss, backward,
// gradient clipping, AdamW, accuracy), nothing else.
//
//   hkt-bench-launches [--steps N] [--max-to-host K] [--by-kernel]
// Prints one markdown table; --by-kernel then a table per model of the
// launches per step by kernel (as HKT_LAUNCH names it), most first.
// --max-to-host K exits 1 when a model's step copies to the host more than
// K times (CTest device_syncs_per_step).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda_emu/emulated.hpp"
#include "hkt/tasks.hpp"
#include "hkt/tasks/train.hpp"

using namespace hkt;

namespace {

struct Counts {
  hkt_emu::WorkCounts work;
  std::map<std::string, uint64_t> by_kernel;
};

Counts run_counts(const std::string& model, int64_t steps) {
  tasks::TrainConfig cfg;
  cfg.task = "synthetic";
  cfg.model = model;
  cfg.data.seq_len = 16;
  cfg.data.train_size = 16;
  cfg.data.val_size = 2;
  cfg.data.test_size = 2;
  cfg.batch_size = 2;
  cfg.steps = steps;
  cfg.log_every = 0;
  cfg.warmup = 0;
  cfg.clip_norm = 1e-3;  // every step clips (the costlier path)
  tasks::RunOptions opt;
  opt.quiet = true;
  opt.device = Device::cuda();
  hkt_emu::clear_work_counts();
  tasks::train(cfg, opt);
  return {hkt_emu::work_counts(), hkt_emu::launches_by_kernel()};
}

// Launches per step by kernel: b's minus a's, over n steps, most first.
void print_by_kernel(const char* model, const Counts& a, const Counts& b, int64_t n) {
  std::vector<std::pair<double, std::string>> rows;
  for (const auto& [name, hi] : b.by_kernel) {
    const auto it = a.by_kernel.find(name);
    const uint64_t lo = it == a.by_kernel.end() ? 0 : it->second;
    if (hi > lo) rows.emplace_back(static_cast<double>(hi - lo) / static_cast<double>(n), name);
  }
  std::sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  std::printf("\n| %s: kernel | launches per step |\n|---|--:|\n", model);
  for (const auto& [per, name] : rows) std::printf("| `%s` | %.1f |\n", name.c_str(), per);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = 2, max_to_host = -1;
  bool by_kernel = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) {
      n = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--max-to-host") && i + 1 < argc) {
      max_to_host = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--by-kernel")) {
      by_kernel = true;
    } else {
      std::fprintf(stderr, "usage: hkt-bench-launches [--steps N] [--max-to-host K] [--by-kernel]\n");
      return 2;
    }
  }
  if (n < 1) {
    std::fprintf(stderr, "hkt-bench-launches: --steps must be at least 1\n");
    return 2;
  }
  try {
    std::printf("| model | launches | cuBLAS calls | copies | to host | memsets | per step of hkt-train, "
                "emulated device |\n|---|--:|--:|--:|--:|--:|---|\n");
    bool over = false;
    std::vector<std::pair<Counts, Counts>> runs;
    const char* models[] = {"hkt-small", "mha-small"};
    for (const char* model : models) {
      runs.emplace_back(run_counts(model, 2), run_counts(model, 2 + n));
      const hkt_emu::WorkCounts &a = runs.back().first.work, &b = runs.back().second.work;
      const auto per = [&](uint64_t hi, uint64_t lo) { return static_cast<double>(hi - lo) / static_cast<double>(n); };
      const double to_host = per(b.to_host, a.to_host);
      std::printf("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | B = 2, T = 16, clipping |\n", model,
                  per(b.launches, a.launches), per(b.gemms, a.gemms), per(b.copies, a.copies), to_host,
                  per(b.memsets, a.memsets));
      if (max_to_host >= 0 && to_host > static_cast<double>(max_to_host)) {
        std::fprintf(stderr, "hkt-bench-launches: %s copies to the host %.1f times per step (at most %lld)\n",
                     model, to_host, static_cast<long long>(max_to_host));
        over = true;
      }
    }
    if (by_kernel)
      for (size_t m = 0; m < runs.size(); ++m) print_by_kernel(models[m], runs[m].first, runs[m].second, n);
    return over ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hkt-bench-launches: error: %s\n", e.what());
    return 1;
  }
}
