// Built only with HKT_TSAN: chunks of a cpu::parallel_for that race on purpose
// (each adds to one shared counter without synchronisation). CTest's
// tsan_probe_detects_race passes only if ThreadSanitizer reports that race,
// which shows that the fork/join annotations of kernels/cpu/parallel.hpp and
// the oneTBB suppressions of tools/tsan.supp do not hide races between chunks.
#include <cstdio>
#include <vector>

#include "kernels/cpu/parallel.hpp"

int main() {
  std::vector<float> out(1 << 16, 0.0f);
  long shared = 0;
  for (int rep = 0; rep < 20; ++rep)
    hkt::cpu::parallel_for(0, 1 << 16, 1024, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) out[i] += 1.0f;  // disjoint chunks: no race
      shared += hi - lo;                                  // the race
    });
  std::printf("%ld %f\n", shared, static_cast<double>(out[5]));
  return 0;
}
