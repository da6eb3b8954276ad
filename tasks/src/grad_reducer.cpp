// Data-parallel training's gradient buckets (comm.hpp: GradReducer) and the device a rank
// trains on (prepare_device): MPI all-reduces of host buffers, NCCL all-reduces of device
// buffers (<hkt/kernels/device_comm.hpp>, kernels/cuda/nccl_comm.cu); docs/distributed.md.
#include <chrono>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "comm.hpp"
#include "hkt/core/error.hpp"
#include "hkt/kernels/device_comm.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/tasks/distributed.hpp"
#include "mpi_calls.hpp"
#ifndef HKT_WITH_CUDA
#define HKT_WITH_CUDA 0
#endif

namespace hkt::tasks {
namespace detail {

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
