// hkt-bench-step: the training step's efficiency against the machine's sgemm
// (docs/performance.md, "The step against sgemm").
//
//   hkt-bench-step [--threads 1,2] [--shapes 512:32,1024:8] [--presets hkt-small,mha-small]
//                  [--rounds R] [--reps N]
//
// For every thread count, R rounds; each round times cblas_sgemm at 2048^3 and
// one training step of every preset and shape (forward, cross-entropy,
// backward, clipping, AdamW; vocab 256, 10 classes, dropout on), each in its
// own process (`hkt-bench-attention --step` and `--sgemm`, found beside this
// executable, with HKT_NUM_THREADS and OPENBLAS_NUM_THREADS set to the thread
// count), the order of the steps reversed every other round. A step's
// counted FLOPs are nn::model_flops x 3 (a backward costs twice its forward);
// its GFLOP/s is that over the median step time, and "% of sgemm" divides by
// the median sgemm GFLOP/s of the same rounds. Prints a markdown table.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "bench_util.hpp"
#include "hkt/models/classifier.hpp"

namespace {

std::string sibling(const char* name) {
  const std::string self = hkt::bench::self_exe("");
  const size_t slash = self.find_last_of('/');
  return (slash == std::string::npos ? std::string(".") : self.substr(0, slash)) + "/" + name;
}

// The first number the command prints on stdout (or a negative number when it fails).
double first_number(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof(buf), p)) out += buf;
  const int rc = pclose(p);
  double x = -1;
  if (rc != 0 || std::sscanf(out.c_str(), "%lf", &x) != 1) return -1;
  return x;
}

using hkt::bench::median_of;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');)
    if (!part.empty()) out.push_back(part);
  return out;
}

struct Shape {
  long long T = 0, B = 0;
};

double step_gflop(const std::string& preset, long long T, long long B) {
  return 3.0 * hkt::nn::model_flops(hkt::bench::step_config(preset, T), B, T).total() / 1e9;
}

int usage(const char* argv0, bool help = false) {
  std::fprintf(help ? stdout : stderr,
               "usage: %s [--threads 1,2] [--shapes 512:32,1024:8] [--presets hkt-small,mha-small] [--rounds R] "
               "[--reps N]\n",
               argv0);
  return help ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads{1, 2};
  std::vector<Shape> shapes{{512, 32}, {1024, 8}};
  std::vector<std::string> presets{"hkt-small", "mha-small"};
  int rounds = 3, reps = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") return usage(argv[0], true);
    const bool known = a == "--threads" || a == "--shapes" || a == "--presets" || a == "--rounds" || a == "--reps";
    if (!known) return std::fprintf(stderr, "hkt-bench-step: unknown option '%s'\n", a.c_str()), usage(argv[0]);
    if (i + 1 >= argc) return std::fprintf(stderr, "hkt-bench-step: %s needs a value\n", a.c_str()), usage(argv[0]);
    const std::string v = argv[++i];
    if (a == "--threads") {
      threads.clear();
      for (const std::string& t : split(v)) threads.push_back(std::atoi(t.c_str()));
    } else if (a == "--shapes") {
      shapes.clear();
      for (const std::string& s : split(v)) {
        Shape sh;
        if (std::sscanf(s.c_str(), "%lld:%lld", &sh.T, &sh.B) != 2 || sh.T < 1 || sh.B < 1) {
          std::fprintf(stderr, "hkt-bench-step: --shapes: '%s' is not T:B with T, B >= 1\n", s.c_str());
          return 2;
        }
        shapes.push_back(sh);
      }
    } else if (a == "--presets") {
      presets = split(v);
    } else if (a == "--rounds") {
      rounds = std::atoi(v.c_str());
    } else {
      reps = std::atoi(v.c_str());
    }
  }
  for (int t : threads)
    if (t < 1) return std::fprintf(stderr, "hkt-bench-step: --threads must be >= 1\n"), 2;
  if (threads.empty()) return std::fprintf(stderr, "hkt-bench-step: --threads lists no count\n"), 2;
  if (shapes.empty()) return std::fprintf(stderr, "hkt-bench-step: --shapes lists no shape\n"), 2;
  if (presets.empty()) return std::fprintf(stderr, "hkt-bench-step: --presets lists no preset\n"), 2;
  if (rounds < 1) return std::fprintf(stderr, "hkt-bench-step: --rounds must be >= 1\n"), 2;
  if (reps < 1) return std::fprintf(stderr, "hkt-bench-step: --reps must be >= 1\n"), 2;
  for (const std::string& p : presets) {
    try {
      (void)step_gflop(p, 16, 1);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "hkt-bench-step: --presets: %s\n", e.what());
      return 2;
    }
  }
  const std::string bench = sibling("hkt-bench-attention");
  if (access(bench.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "hkt-bench-step: %s is missing (it lies beside this executable in a build)\n", bench.c_str());
    return 1;
  }
  std::printf("## The training step against sgemm: counted FLOPs (nn::model_flops x 3) over the median step time\n\n");
  std::printf("each step and sgemm 2048^3 in its own process, best of %d after a warm-up, median of %d round(s)\n\n",
              reps, rounds);
  std::printf("| threads | T x B | preset | GFLOP / step | step ms | GFLOP/s | sgemm GFLOP/s | %% of sgemm |\n");
  std::printf("|--:|---|---|--:|--:|--:|--:|--:|\n");
  for (int t : threads) {
    const std::string env = "HKT_NUM_THREADS=" + std::to_string(t) + " OPENBLAS_NUM_THREADS=" + std::to_string(t) + " '";
    std::vector<double> sgemm;
    std::vector<std::vector<double>> step(shapes.size() * presets.size());
    for (int r = 0; r < rounds; ++r) {
      sgemm.push_back(first_number(env + bench + "' --sgemm 2048 2048 2048"));
      for (size_t j = 0; j < step.size(); ++j) {
        const size_t k = r % 2 ? step.size() - 1 - j : j;
        const Shape& sh = shapes[k / presets.size()];
        const std::string& p = presets[k % presets.size()];
        step[k].push_back(first_number(env + bench + "' --step " + p + " " + std::to_string(sh.T) + " " +
                                       std::to_string(sh.B) + " " + std::to_string(reps)));
      }
    }
    const double sg = median_of(sgemm);
    for (size_t k = 0; k < step.size(); ++k) {
      const Shape& sh = shapes[k / presets.size()];
      const std::string& p = presets[k % presets.size()];
      const double s = median_of(step[k]);
      if (s <= 0 || sg <= 0) {
        std::fprintf(stderr, "hkt-bench-step: a child failed (%s, T = %lld, B = %lld, %d threads)\n", p.c_str(), sh.T,
                     sh.B, t);
        return 1;
      }
      const double g = step_gflop(p, sh.T, sh.B);
      std::printf("| %d | %lld x %lld | %s | %.2f | %.0f | %.1f | %.1f | %.0f%% |\n", t, sh.T, sh.B, p.c_str(), g,
                  1e3 * s, g / s, sg, 100.0 * g / s / sg);
      std::fflush(stdout);
    }
  }
  return 0;
}
