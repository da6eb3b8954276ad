// Parallel loops over index ranges with oneTBB.
//
// The split is fixed by the grain size alone (simple_partitioner), never by
// the number of threads or by timing, so a kernel that reduces within chunks
// and combines the chunks in order gives the same bits on every run.
#pragma once
#include <cstdint>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

namespace hkt::cpu {

// f(lo, hi) over [begin, end) in chunks of at most `grain`.
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, F&& f) {
  if (end <= begin) return;
  if (grain < 1) grain = 1;
  if (end - begin <= grain) {
    f(begin, end);
    return;
  }
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(begin, end, grain),
      [&](const tbb::blocked_range<int64_t>& r) { f(r.begin(), r.end()); }, tbb::simple_partitioner());
}

// Elements per task for cheap elementwise work.
inline constexpr int64_t kElementwiseGrain = 1 << 15;

}  // namespace hkt::cpu
