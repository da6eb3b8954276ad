// NCCL all-reduces of device buffers (<hkt/kernels/device_comm.hpp>). The real implementation
// needs HKT_WITH_NCCL (CMake's HKT_NCCL); the tests' emulated backend
// (tests/cuda_emu) and a build without NCCL get the fallback at the end, which
// says that there is no NCCL.
#include "hkt/kernels/device_comm.hpp"

#if defined(HKT_WITH_NCCL)  // only the library target defines it; the emulator (kernels/cuda_emu) never does
#include <nccl.h>

#include <cstring>

#include "kernels/cuda/common.cuh"

namespace hkt::cuda::nccl {
namespace {

void check_nccl(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return;
  const char* last = ncclGetLastError(nullptr);
  throw Error(str_cat("NCCL: ", what, " failed: ", ncclGetErrorString(r),
                      last && *last ? str_cat(" (", last, ")") : std::string()));
}

}  // namespace

bool available() { return true; }

std::string describe() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "NCCL (version unknown)";
  // NCCL >= 2.9 encodes the version as major * 10000 + minor * 100 + patch.
  return str_cat("NCCL ", v / 10000, ".", (v / 100) % 100, ".", v % 100);
}

void select_device(int local_rank, int local_size) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) n = 0;
  HKT_CHECK(n > 0, "data-parallel training on GPUs: no CUDA device is available",
            e != cudaSuccess ? str_cat(" (cudaGetDeviceCount: ", cudaGetErrorString(e), ")") : std::string());
  HKT_CHECK(local_size <= n, "data-parallel training on GPUs: ", local_size, " processes on this machine but ", n,
            " GPU", n == 1 ? "" : "s", ": NCCL needs one GPU per process (it refuses two ranks on one GPU); "
            "start at most ", n, " processes per machine (mpirun --map-by ppr:", n, ":node)");
  CUDA_CHECK(cudaSetDevice(local_rank));
}

void unique_id(unsigned char* id) {
  static_assert(sizeof(ncclUniqueId) == kIdBytes, "NCCL_UNIQUE_ID_BYTES changed");
  ncclUniqueId u;
  check_nccl(ncclGetUniqueId(&u), "ncclGetUniqueId");
  std::memcpy(id, &u, kIdBytes);
}

struct Comm::Impl {
  ncclComm_t comm = nullptr;
  cudaStream_t s = nullptr;       // the all-reduces' stream
  cudaEvent_t filled = nullptr;   // on the backend's stream: the buffer is filled
  cudaEvent_t reduced = nullptr;  // on s: the all-reduces so far are done
};

Comm::Comm(const unsigned char* id, int nranks, int rank) : p_(std::make_unique<Impl>()) {
  ncclUniqueId u;
  std::memcpy(&u, id, kIdBytes);
  (void)stream();  // the backend's stream first (on this process's device)
  CUDA_CHECK(cudaStreamCreateWithFlags(&p_->s, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&p_->filled, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&p_->reduced, cudaEventDisableTiming));
  check_nccl(ncclCommInitRank(&p_->comm, nranks, u, rank), "ncclCommInitRank");
}

Comm::~Comm() {
  if (!p_) return;
  // At exit (or after an error) nothing more is waited for: the job is ending.
  if (p_->comm) (void)ncclCommDestroy(p_->comm);
  if (p_->filled) (void)cudaEventDestroy(p_->filled);
  if (p_->reduced) (void)cudaEventDestroy(p_->reduced);
  if (p_->s) (void)cudaStreamDestroy(p_->s);
}

void Comm::allreduce_sum(void* buf, size_t count, bool f64) {
  CUDA_CHECK(cudaEventRecord(p_->filled, stream()));
  CUDA_CHECK(cudaStreamWaitEvent(p_->s, p_->filled, 0));
  check_nccl(ncclAllReduce(buf, buf, count, f64 ? ncclFloat64 : ncclFloat32, ncclSum, p_->comm, p_->s),
             "ncclAllReduce");
}

void Comm::join() {
  CUDA_CHECK(cudaEventRecord(p_->reduced, p_->s));
  CUDA_CHECK(cudaStreamWaitEvent(stream(), p_->reduced, 0));
}

void Comm::synchronize() { CUDA_CHECK(cudaStreamSynchronize(p_->s)); }

}  // namespace hkt::cuda::nccl

#else  // no NCCL in this build

#include "hkt/core/error.hpp"

namespace hkt::cuda::nccl {
namespace {
[[noreturn]] void absent() {
  throw Error(str_cat("NCCL: ", describe()));
}
}  // namespace

bool available() { return false; }
std::string describe() {
  return "this build has no NCCL (HKT_NCCL=OFF: CMake found no nccl.h / libnccl, or no MPI; the emulated "
         "CUDA backend of tests/cuda_emu never has it)";
}
void select_device(int, int) { absent(); }
void unique_id(unsigned char*) { absent(); }
struct Comm::Impl {};
Comm::Comm(const unsigned char*, int, int) { absent(); }
Comm::~Comm() = default;
void Comm::allreduce_sum(void*, size_t, bool) { absent(); }
void Comm::join() { absent(); }
void Comm::synchronize() { absent(); }

}  // namespace hkt::cuda::nccl
#endif
