// The MPI job (distributed.hpp) and the collectives of data-parallel training
// (comm.hpp). Every MPI call of hkt is in this file and grad_reducer.cpp (the gradient
// buckets); the NCCL calls (gradients on GPUs) are in kernels/cuda/nccl_comm.cu, reached
// through <hkt/kernels/device_comm.hpp>.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <unordered_map>

#include "comm.hpp"
#include "mpi_calls.hpp"
#include "hkt/core/error.hpp"
#include "hkt/kernels/device_comm.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/tasks/distributed.hpp"
#ifndef HKT_WITH_MPI
#define HKT_WITH_MPI 0
#endif
#if HKT_WITH_MPI
#include <mpi.h>
#endif
#ifndef HKT_WITH_CUDA
#define HKT_WITH_CUDA 0
#endif

namespace hkt::tasks {
namespace {

#if HKT_WITH_MPI
using detail::check_mpi;
#endif

// The launcher's process count, from its environment (0: not launched by one).
int launcher_size() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"}) {
    if (const char* s = std::getenv(v); s && *s) return std::atoi(s);
  }
  // Slurm's srun with PMIx sets PMIX_RANK but the size only through PMIx itself.
  if (std::getenv("PMIX_RANK")) return -1;
  return 0;
}

#if HKT_WITH_MPI
void finalize_at_exit() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Finalize();
}
#endif

World join() {
  World w;
  const int n = launcher_size();
  if (n == 0 || n == 1) return w;  // no launcher, or a job of one: as without MPI
#if HKT_WITH_MPI
  int provided = 0;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  std::atexit(finalize_at_exit);
  // Errors end the job with a message (MPI_Abort) rather than a hang.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  MPI_Comm local;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local),
            "MPI_Comm_split_type");
  MPI_Comm_size(local, &w.local_size);
  MPI_Comm_rank(local, &w.local_rank);
  MPI_Comm_free(&local);
#else
  throw Error(str_cat("this process was started by an MPI launcher with ", n < 0 ? std::string("several")
                                                                                 : std::to_string(n),
                      " processes, but hkt was built without MPI (HKT_MPI=OFF): each process would train alone. "
                      "Install libopenmpi-dev (tools/setup.sh) and rebuild, or run one process"));
#endif
  return w;
}

}  // namespace

const World& world() {
  static const World w = join();
  return w;
}

bool built_with_mpi() { return HKT_WITH_MPI != 0; }

std::string rank_prefix() {
  const World& w = world();
  return w.size > 1 ? str_cat("rank ", w.rank, " of ", w.size, ": ") : std::string();
}

void abort_job(int status) {
  std::cout.flush();
  std::cerr.flush();
#if HKT_WITH_MPI
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin && world().size > 1) MPI_Abort(MPI_COMM_WORLD, status);
#endif
  std::exit(status);
}

namespace detail {

#if HKT_WITH_MPI
void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw Error(str_cat(rank_prefix(), what, " failed: ", std::string(msg, static_cast<size_t>(len))));
}
MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::Float32: return MPI_FLOAT;
    case DType::Float64: return MPI_DOUBLE;
    default: throw Error(str_cat("data-parallel training: gradients of dtype ", t, " are not supported"));
  }
}
namespace {
bool many() { return world().size > 1; }
}  // namespace
#endif

void allreduce_sum(double* x, int64_t n) {
#if HKT_WITH_MPI
  if (!many() || n == 0) return;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, x, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
            "MPI_Allreduce");
#else
  (void)x, (void)n;
#endif
}

std::vector<uint64_t> allgather_u64(uint64_t v) {
  std::vector<uint64_t> out(static_cast<size_t>(world().size), v);
#if HKT_WITH_MPI
  if (many())
    check_mpi(MPI_Allgather(&v, 1, MPI_UINT64_T, out.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD), "MPI_Allgather");
#endif
  return out;
}

void broadcast_tensors(const std::vector<Tensor>& ts) {
#if HKT_WITH_MPI
  if (!many()) return;
  for (const Tensor& t : ts) {
    HKT_CHECK(t.is_contiguous(), "broadcast_tensors: a contiguous tensor is needed");
    const int64_t bytes = t.numel() * static_cast<int64_t>(dtype_size(t.dtype()));
    // A device tensor goes through a host copy (once per run: the initial and the best weights).
    const Tensor h = t.device().is_cpu() ? t : contiguous(to_device(t, Device::cpu()));
    auto* p = static_cast<char*>(h.raw_data());
    for (int64_t off = 0; off < bytes; off += int64_t{1} << 30) {
      const int64_t n = std::min<int64_t>(bytes - off, int64_t{1} << 30);
      check_mpi(MPI_Bcast(p + off, static_cast<int>(n), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
    }
    if (!t.device().is_cpu()) {
#if HKT_WITH_CUDA
      cuda::copy_host_to_device(t.raw_data(), h.raw_data(), static_cast<size_t>(bytes));
#else
      throw Error(str_cat("broadcast_tensors: a tensor on ", t.device(), " in a build without CUDA"));
#endif
    }
  }
#else
  (void)ts;
#endif
}

void barrier() {
#if HKT_WITH_MPI
  if (many()) check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
#endif
}

uint64_t checksum(const std::vector<Tensor>& ts) {
  uint64_t h = 1469598103934665603ull;
  for (const Tensor& t0 : ts) {
    const Tensor t = t0.device().is_cpu() && t0.is_contiguous() ? t0 : contiguous(to_device(t0, Device::cpu()));
    const auto* p = static_cast<const unsigned char*>(t.raw_data());
    const int64_t bytes = t.numel() * static_cast<int64_t>(dtype_size(t.dtype()));
    for (int64_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  }
  return h;
}

}  // namespace detail
}  // namespace hkt::tasks
