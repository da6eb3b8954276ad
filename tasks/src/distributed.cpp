// The MPI job (distributed.hpp) and the collectives of data-parallel training
// (comm.hpp). Every MPI call of hkt is in this file; the NCCL calls (gradients
// on GPUs) are in kernels/cuda/nccl_comm.cu, reached through <hkt/kernels/device_comm.hpp>.
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
void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw Error(str_cat(rank_prefix(), what, " failed: ", std::string(msg, static_cast<size_t>(len))));
}
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
namespace {
bool many() { return world().size > 1; }
MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::Float32: return MPI_FLOAT;
    case DType::Float64: return MPI_DOUBLE;
    default: throw Error(str_cat("data-parallel training: gradients of dtype ", t, " are not supported"));
  }
}
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

#if HKT_WITH_CUDA && HKT_WITH_MPI
namespace {
// The job's NCCL communicator (docs/distributed.md, "GPUs"): created by every rank at its
// first device all-reduce, rank 0's ncclUniqueId sent to the others with MPI_Bcast. It
// lives until the process ends (never destroyed: at exit the CUDA runtime may be gone).
cuda::nccl::Comm& device_comm() {
  static cuda::nccl::Comm* comm = [] {
    unsigned char id[cuda::nccl::kIdBytes] = {};
    if (world().rank == 0) cuda::nccl::unique_id(id);
    if (world().size > 1)
      check_mpi(MPI_Bcast(id, static_cast<int>(cuda::nccl::kIdBytes), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
    else
      std::cerr << "sum_buckets_alone_with_nccl: the gradient buckets are summed by a communicator of one rank ("
                << cuda::nccl::describe() << ")\n";
    return new cuda::nccl::Comm(id, world().size, world().rank);
  }();
  return *comm;
}
}  // namespace
#endif

namespace {
bool nccl_alone = false;  // sum_buckets_alone_with_nccl

bool nccl_alone_active(const Device& d) {
#if HKT_WITH_CUDA && HKT_WITH_MPI
  return nccl_alone && !d.is_cpu() && world().size == 1 && cuda::nccl::available();
#else
  (void)d;
  return false;
#endif
}
}  // namespace

}  // namespace detail

void sum_buckets_alone_with_nccl(bool on) { detail::nccl_alone = on; }

namespace detail {

void prepare_device(const Device& device) {
  if (device.is_cpu() || world().size <= 1) return;
  const World& w = world();
#if HKT_WITH_CUDA && HKT_WITH_MPI
  HKT_CHECK(cuda::nccl::available(), w.size, " processes with --device ", device.str(),
            ": the gradients of ranks on GPUs are summed with NCCL, and NCCL is unavailable: ",
            cuda::nccl::describe(), " (docs/distributed.md)");
  cuda::nccl::select_device(w.local_rank, w.local_size);
#else
  throw Error(str_cat(w.size, " processes with --device ", device.str(),
                      ": the gradients of ranks on GPUs are summed with NCCL, and this library was built "
                      "without NCCL (it needs the CUDA backend, HKT_CUDA, and HKT_NCCL; docs/distributed.md)"));
#endif
}

struct GradReducer::State {
  bool overlap = true;
  double comm_s = 0.0;
  int64_t nb = 0, per = 0, es = 0, total = 0, next = 0;  // next: the first bucket not started
  std::vector<Tensor> params;                            // reverse parameter order
  std::vector<int64_t> start;                            // each one's first flat element
  std::unordered_map<const TensorImpl*, size_t> index;
  std::vector<char> reported;
  std::vector<int64_t> pending;  // per bucket: parameters not yet complete
  std::vector<std::vector<unsigned char>> bufs;
  // On a GPU: the buckets are device buffers, summed by NCCL on its own stream (device_comm()).
  bool on_device = false;
  std::vector<Tensor> dbufs;
  Tensor dzeros;  // one bucket of zeros (a parameter without a gradient)
#if HKT_WITH_MPI
  MPI_Datatype type = MPI_FLOAT;
  std::vector<MPI_Request> reqs;
#endif
  bool active = false;

  int64_t first_bucket(size_t i) const { return start[i] / per; }
  int64_t last_bucket(size_t i) const {
    const int64_t n = params[i].numel();
    return n == 0 ? first_bucket(i) - 1 : (start[i] + n - 1) / per;
  }
  // Copies bucket k's elements between the gradients and its buffer (zeros for a missing gradient).
  void copy(int64_t k, bool pack) {
    if (on_device) return copy_device(k, pack);
    const int64_t lo = k * per, hi = std::min(total, lo + per);
    unsigned char* buf = bufs[static_cast<size_t>(k)].data();
    for (size_t i = 0; i < params.size(); ++i) {
      const int64_t base = start[i], n = params[i].numel(), a = std::max(lo, base), b = std::min(hi, base + n);
      if (a >= b) continue;
      const Tensor g = params[i].grad();
      unsigned char* bp = buf + (a - lo) * es;
      if (!g.defined()) {
        if (pack) std::memset(bp, 0, static_cast<size_t>((b - a) * es));
        continue;
      }
      HKT_CHECK(g.device().is_cpu() && g.is_contiguous() && g.dtype() == params[i].dtype(),
                "data-parallel training: a gradient that is not a CPU, contiguous tensor of its parameter's dtype");
      auto* gp = static_cast<unsigned char*>(g.raw_data()) + (a - base) * es;
      if (pack) std::memcpy(bp, gp, static_cast<size_t>((b - a) * es));
      else std::memcpy(gp, bp, static_cast<size_t>((b - a) * es));
    }
  }
  // The same on the device: copies queued on the backend's stream, after the kernels
  // that computed the gradients (and, unpacking, after the all-reduces: Comm::join).
  void copy_device(int64_t k, bool pack) {
#if HKT_WITH_CUDA
    const int64_t lo = k * per, hi = std::min(total, lo + per);
    auto* buf = static_cast<unsigned char*>(dbufs[static_cast<size_t>(k)].raw_data());
    for (size_t i = 0; i < params.size(); ++i) {
      const int64_t base = start[i], n = params[i].numel(), a = std::max(lo, base), b = std::min(hi, base + n);
      if (a >= b) continue;
      const Tensor g = params[i].grad();
      unsigned char* bp = buf + (a - lo) * es;
      const auto bytes = static_cast<size_t>((b - a) * es);
      if (!g.defined()) {
        if (pack) cuda::copy_device_to_device(bp, dzeros.raw_data(), bytes);
        continue;
      }
      HKT_CHECK(g.device() == params[i].device() && g.is_contiguous() && g.dtype() == params[i].dtype(),
                "data-parallel training: a gradient that is not a contiguous tensor of its parameter's device "
                "and dtype");
      auto* gp = static_cast<unsigned char*>(g.raw_data()) + (a - base) * es;
      if (pack) cuda::copy_device_to_device(bp, gp, bytes);
      else cuda::copy_device_to_device(gp, bp, bytes);
    }
#else
    (void)k, (void)pack;
#endif
  }
  // Starts the buckets whose parameters are all complete, in index order.
  void start_ready(bool all) {
#if HKT_WITH_MPI
    while (next < nb && (all || pending[static_cast<size_t>(next)] == 0)) {
      const int64_t k = next++, n = std::min(total, (k + 1) * per) - k * per;
      copy(k, true);
      const auto c0 = std::chrono::steady_clock::now();
      if (on_device) {
#if HKT_WITH_CUDA
        // NCCL on its stream, after the packing copies; without overlap the host waits for each.
        device_comm().allreduce_sum(dbufs[static_cast<size_t>(k)].raw_data(), static_cast<size_t>(n), es == 8);
        if (!overlap) device_comm().synchronize();
#endif
      } else if (overlap)
        check_mpi(MPI_Iallreduce(MPI_IN_PLACE, bufs[static_cast<size_t>(k)].data(), static_cast<int>(n), type,
                                 MPI_SUM, MPI_COMM_WORLD, &reqs[static_cast<size_t>(k)]),
                  "MPI_Iallreduce");
      else
        check_mpi(MPI_Allreduce(MPI_IN_PLACE, bufs[static_cast<size_t>(k)].data(), static_cast<int>(n), type, MPI_SUM,
                                MPI_COMM_WORLD),
                  "MPI_Allreduce");
      comm_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    }
#else
    (void)all;
#endif
  }
  void ready(const Tensor& leaf) {
    const auto it = index.find(leaf.unsafe_impl());
    if (it == index.end() || reported[it->second]) return;
    reported[it->second] = 1;
    for (int64_t k = first_bucket(it->second); k <= last_bucket(it->second); ++k) --pending[static_cast<size_t>(k)];
    start_ready(false);
#if HKT_WITH_MPI
    if (next > 0 && !on_device) {  // lets the library progress the started all-reduces (no progress thread by default)
      int done = 0;
      check_mpi(MPI_Testall(static_cast<int>(next), reqs.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall");
    }
#endif
  }
};

GradReducer::GradReducer(bool overlap) : s_(std::make_unique<State>()) { s_->overlap = overlap; }
GradReducer::~GradReducer() = default;
GradReducer::GradReducer(GradReducer&&) noexcept = default;
GradReducer& GradReducer::operator=(GradReducer&&) noexcept = default;
double GradReducer::comm_seconds() const { return s_->comm_s; }
int64_t GradReducer::buckets() const { return s_->nb; }

void GradReducer::begin(const std::vector<Tensor>& params) {
  State& s = *s_;
  s.active = world().size > 1 || (!params.empty() && nccl_alone_active(params.front().device()));
  if (!s.active) return;
#if HKT_WITH_MPI
  s.params.assign(params.rbegin(), params.rend());
  HKT_CHECK(!s.params.empty(), "data-parallel training: a model without parameters");
  const DType dt = s.params.front().dtype();
  for (const Tensor& p : s.params)
    HKT_CHECK(p.dtype() == dt, "data-parallel training: parameters of dtypes ", p.dtype(), " and ", dt,
              " in one model");
  s.type = mpi_type(dt);
  s.es = static_cast<int64_t>(dtype_size(dt));
  s.per = kBucketBytes / s.es;
  s.start.assign(s.params.size(), 0);
  s.index.clear();
  s.total = 0;
  for (size_t i = 0; i < s.params.size(); ++i) {
    s.start[i] = s.total;
    s.total += s.params[i].numel();
    s.index[s.params[i].unsafe_impl()] = i;
  }
  s.nb = (s.total + s.per - 1) / s.per;
  s.next = 0;
  s.reported.assign(s.params.size(), 0);
  s.pending.assign(static_cast<size_t>(s.nb), 0);
  for (size_t i = 0; i < s.params.size(); ++i)
    for (int64_t k = s.first_bucket(i); k <= s.last_bucket(i); ++k) ++s.pending[static_cast<size_t>(k)];
  s.bufs.resize(static_cast<size_t>(s.nb));
  for (int64_t k = 0; k < s.nb && s.params.front().device().is_cpu(); ++k)
    s.bufs[static_cast<size_t>(k)].resize(static_cast<size_t>(s.per * s.es));
  s.reqs.assign(static_cast<size_t>(s.nb), MPI_REQUEST_NULL);
  s.on_device = !s.params.front().device().is_cpu();
  if (s.on_device) {
#if HKT_WITH_CUDA
    for (const Tensor& p : s.params)
      HKT_CHECK(p.device() == s.params.front().device(), "data-parallel training: parameters on ", p.device(),
                " and ", s.params.front().device(), " in one model");
    s.bufs.clear();
    if (static_cast<int64_t>(s.dbufs.size()) != s.nb) {
      const TensorOptions o{dt, s.params.front().device(), false};
      s.dbufs.clear();
      for (int64_t k = 0; k < s.nb; ++k) s.dbufs.push_back(empty({s.per}, o));
      s.dzeros = zeros({s.per}, o);
    }
#else
    throw Error(str_cat("data-parallel training: parameters on ", s.params.front().device(),
                        " in a build without CUDA"));
#endif
  }
#else
  (void)params;
#endif
}

std::function<void(const Tensor&)> GradReducer::hook() {
  if (!s_->active || !s_->overlap) return {};
  State* s = s_.get();
  return [s](const Tensor& leaf) { s->ready(leaf); };
}

void GradReducer::finish() {
  State& s = *s_;
  if (!s.active) return;
  s.active = false;
#if HKT_WITH_MPI
  s.start_ready(true);  // the rest (all of them without overlap), in index order
  const auto w0 = std::chrono::steady_clock::now();
  if (s.on_device) {
#if HKT_WITH_CUDA
    device_comm().join();  // the backend's stream (the copies back, the clip, the step) waits for NCCL's
#endif
  } else if (s.overlap) {
    check_mpi(MPI_Waitall(static_cast<int>(s.nb), s.reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }
  s.comm_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  for (int64_t k = 0; k < s.nb; ++k) s.copy(k, false);
#endif
}

}  // namespace detail
}  // namespace hkt::tasks
