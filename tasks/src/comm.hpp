// Collectives of data-parallel training (internal; docs/distributed.md). In a
// world of one process every function is a no-op (or the identity), and no MPI
// function is called; without MPI (HKT_MPI=OFF) the world always has one.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "hkt/core/tensor.hpp"
#include "hkt/tasks/distributed.hpp"

namespace hkt::tasks::detail {

// Sums x[0..n) over the ranks, in place, on every rank.
void allreduce_sum(double* x, int64_t n);
// Every rank's v, by rank.
std::vector<uint64_t> allgather_u64(uint64_t v);
// Rank 0's contiguous CPU tensors' bytes copied into every rank's tensors (same shapes).
void broadcast_tensors(const std::vector<Tensor>& ts);
// Waits for every rank.
void barrier();
// Before the model of a job of several ranks goes to `device`: on a GPU, checks that
// the gradients can be summed there (NCCL) and makes cuda:(local rank) this process's
// GPU; throws hkt::Error saying what is missing. Nothing on the CPU or in a world of one.
void prepare_device(const Device& device);
// FNV-1a (64 bit) of the tensors' bytes, in order (on the host).
uint64_t checksum(const std::vector<Tensor>& ts);

// Sums the parameters' gradients over the ranks in fixed-size buckets, in a
// fixed order (the parameters in reverse order, roughly the order in which the
// backward completes them): bucket k always holds the same elements, so for a
// given number of ranks the sums, and the weights, are bit-identical from run
// to run and on every rank.
//
//   reducer.begin(params);
//   { GradReadyGuard hook(reducer.hook()); loss.backward(); }   // overlap: buckets start during backward
//   reducer.finish();                                           // every gradient now holds the sum
//
// overlap: a bucket's non-blocking all-reduce starts as soon as all of its
// parameters' gradients are complete (the hook, called by backward), buckets
// always started in index order so that every rank posts them alike; false:
// after the backward, one blocking all-reduce per bucket. A parameter without a
// gradient (the same on every rank: the same model and code path) counts as
// zeros and keeps no gradient.
class GradReducer {
 public:
  static constexpr int64_t kBucketBytes = int64_t{1} << 20;
  explicit GradReducer(bool overlap = true);
  ~GradReducer();
  GradReducer(GradReducer&&) noexcept;
  GradReducer& operator=(GradReducer&&) noexcept;
  void begin(const std::vector<Tensor>& params);
  std::function<void(const Tensor&)> hook();  // empty without overlap or in a world of one
  void finish();
  double comm_seconds() const;  // time spent in MPI calls, summed over steps
  int64_t buckets() const;      // of the last step

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace hkt::tasks::detail
