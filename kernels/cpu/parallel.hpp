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

// ThreadSanitizer builds (HKT_TSAN, docs/reliability.md): oneTBB's library is
// not instrumented, so TSan cannot see that spawning the tasks happens before
// they run, nor that they finish before tbb::parallel_for returns.
// parallel_for tells it, with exactly these fork and join edges: the chunks
// stay unordered among themselves, so races between chunks are still found.
#if defined(__SANITIZE_THREAD__)
#define HKT_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HKT_UNDER_TSAN 1
#endif
#endif
#ifdef HKT_UNDER_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

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
#ifdef HKT_UNDER_TSAN
  char fork = 0, join = 0;
  __tsan_release(&fork);
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(begin, end, grain),
      [&](const tbb::blocked_range<int64_t>& r) {
        __tsan_acquire(&fork);
        f(r.begin(), r.end());
        __tsan_release(&join);
      },
      tbb::simple_partitioner());
  __tsan_acquire(&join);
#else
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(begin, end, grain),
      [&](const tbb::blocked_range<int64_t>& r) { f(r.begin(), r.end()); }, tbb::simple_partitioner());
#endif
}

// The calling thread's own W, kept for the life of the thread. Kernels keep
// their tile buffers there instead of fresh vectors per task: freeing a few
// hundred KiB per task makes glibc trim its thread arenas (madvise), and the
// TLB shootdowns and page faults that follow cost more than the arithmetic
// (a sampled profile of local attention's backward had most of its time
// there). Only for bodies that run no nested parallel loop: a thread waiting
// in one may run another task of the outer loop, which would share W.
template <class W>
W& per_thread() {
  static thread_local W w;
  return w;
}

// Elements per task for cheap elementwise work.
inline constexpr int64_t kElementwiseGrain = 1 << 15;

}  // namespace hkt::cpu
