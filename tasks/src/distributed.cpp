// The MPI job (distributed.hpp) and the collectives of data-parallel training
// (comm.hpp). Every MPI call of hkt is in this file.
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
#include "hkt/ops/factory.hpp"
#include "hkt/tasks/distributed.hpp"
#ifndef HKT_WITH_MPI
#define HKT_WITH_MPI 0
#endif
#if HKT_WITH_MPI
#include <mpi.h>
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
    HKT_CHECK(t.device().is_cpu() && t.is_contiguous(), "broadcast_tensors: a CPU, contiguous tensor is needed");
    const int64_t bytes = t.numel() * static_cast<int64_t>(dtype_size(t.dtype()));
    auto* p = static_cast<char*>(t.raw_data());
    for (int64_t off = 0; off < bytes; off += int64_t{1} << 30) {
      const int64_t n = std::min<int64_t>(bytes - off, int64_t{1} << 30);
      check_mpi(MPI_Bcast(p + off, static_cast<int>(n), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
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
  // Starts the buckets whose parameters are all complete, in index order.
  void start_ready(bool all) {
#if HKT_WITH_MPI
    while (next < nb && (all || pending[static_cast<size_t>(next)] == 0)) {
      const int64_t k = next++, n = std::min(total, (k + 1) * per) - k * per;
      copy(k, true);
      const auto c0 = std::chrono::steady_clock::now();
      if (overlap)
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
    if (next > 0) {  // lets the library progress the started all-reduces (no progress thread by default)
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
  s.active = world().size > 1;
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
  for (int64_t k = 0; k < s.nb; ++k) s.bufs[static_cast<size_t>(k)].resize(static_cast<size_t>(s.per * s.es));
  s.reqs.assign(static_cast<size_t>(s.nb), MPI_REQUEST_NULL);
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
  if (s.overlap)
    check_mpi(MPI_Waitall(static_cast<int>(s.nb), s.reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  s.comm_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  for (int64_t k = 0; k < s.nb; ++k) s.copy(k, false);
#endif
}

}  // namespace detail
}  // namespace hkt::tasks
