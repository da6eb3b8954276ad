// The device side of data-parallel training on GPUs, for the trainer (tasks/):
// NCCL all-reduces of device buffers and raw copies of device memory. Plain C++:
// no CUDA or NCCL header is needed to include this one. Implemented by the CUDA
// backend (kernels/cuda/nccl_comm.cu, runtime.cu); in a build without NCCL
// (HKT_NCCL=OFF) and in the tests' emulated backend, nccl::available() is false
// and the rest of nccl:: throws hkt::Error saying so. A build without the CUDA
// backend has no device memory: the trainer calls none of these there.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

namespace hkt::cuda {

// Copies of nbytes from a host buffer to a buffer of device 0, and between two
// buffers of device 0, ordered on the backend's stream; they return once the copy
// is complete (host memory may be reused right away).
void copy_host_to_device(void* dst, const void* src, size_t nbytes);
void copy_device_to_device(void* dst, const void* src, size_t nbytes);

}  // namespace hkt::cuda

namespace hkt::cuda::nccl {

inline constexpr size_t kIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES

// Whether this library can all-reduce device buffers with NCCL.
bool available();
// "NCCL 2.x.y", or why there is none.
std::string describe();

// One process per GPU: makes cuda:(local_rank) this process's device before the
// backend touches a GPU (the backend then works on it as its cuda:0). Throws
// hkt::Error naming the counts when the machine has fewer GPUs than ranks on it
// (NCCL refuses two ranks on one GPU).
void select_device(int local_rank, int local_size);

// ncclGetUniqueId into id[0..kIdBytes) (rank 0 calls it; the id is sent to the others).
void unique_id(unsigned char* id);

// A communicator of `nranks` processes (ncclCommInitRank, a collective call) with
// its own CUDA stream. Every call is collective and must be made by every rank
// in the same order.
class Comm {
 public:
  Comm(const unsigned char* id, int nranks, int rank);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  // Sums `count` float32 (or float64) values of the device buffer `buf` over the
  // ranks, in place: queued on the communicator's stream after everything queued
  // on the backend's stream so far (the copies that filled `buf`); returns at once.
  void allreduce_sum(void* buf, size_t count, bool f64);
  // Makes the backend's stream wait for every all-reduce started so far (returns
  // at once; what the backend queues next sees the sums).
  void join();
  // Blocks until every all-reduce started so far is complete.
  void synchronize();

 private:
  struct Impl;
  std::unique_ptr<Impl> p_;
};

}  // namespace hkt::cuda::nccl
