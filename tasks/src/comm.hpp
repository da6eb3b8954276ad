// Collectives of data-parallel training (internal; docs/distributed.md). In a
// world of one process every function is a no-op (or the identity), and no MPI
// function is called; without MPI (HKT_MPI=OFF) the world always has one.
#pragma once
#include <cstdint>
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
// FNV-1a (64 bit) of the tensors' bytes, in order (on the host).
uint64_t checksum(const std::vector<Tensor>& ts);

// Sums the parameters' gradients over the ranks in fixed-size buckets, in a
// fixed order (the parameters in reverse order, as the backward completes
// them): bucket k always holds the same elements, so for a given number of
// ranks the sums, and the weights, are bit-identical from run to run and on
// every rank. overlap: each bucket's non-blocking all-reduce starts as soon as
// it is packed, while the next ones are packed (false: one blocking all-reduce
// per bucket, one after the other). Undefined gradients are skipped (the same
// on every rank: the same model and code path).
class GradReducer {
 public:
  static constexpr int64_t kBucketBytes = int64_t{1} << 20;
  explicit GradReducer(bool overlap) : overlap_(overlap) {}
  void reduce(const std::vector<Tensor>& params);
  double comm_seconds() const { return comm_s_; }  // time in MPI calls, summed
  int64_t buckets() const { return buckets_; }     // of the last reduce()

 private:
  bool overlap_;
  double comm_s_ = 0.0;
  int64_t buckets_ = 0;
  std::vector<std::vector<unsigned char>> bufs_;
};

}  // namespace hkt::tasks::detail
