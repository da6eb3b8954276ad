#include "hkt/ops/threads.hpp"

#include <cstdlib>
#include <memory>
#include <mutex>

#include <tbb/global_control.h>
#include <tbb/info.h>

#include "hkt/core/error.hpp"
#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/sgemm_avx512.hpp"

namespace hkt {
namespace {
std::mutex g_mu;
std::unique_ptr<tbb::global_control> g_control;

void set_locked(int n) {
  g_control.reset();
  if (n > 0) g_control = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, n);
}

}  // namespace

namespace detail {
// Applies HKT_NUM_THREADS once. Called by a static initialiser here and by
// one in factory.cpp: in a static libhkt.a this object file is linked only
// when a program refers to it, and every program uses the factories.
bool apply_thread_env() {
  static const bool done = [] {
    if (const char* env = std::getenv("HKT_NUM_THREADS")) {
      const int n = std::atoi(env);
      std::lock_guard<std::mutex> lock(g_mu);
      if (n > 0) set_locked(n);
    }
    return true;
  }();
  return done;
}
}  // namespace detail

namespace {
const bool kFromEnv = detail::apply_thread_env();
}  // namespace

void set_num_threads(int n) {
  HKT_CHECK(n >= 0, "set_num_threads: expected n >= 1 (or 0 for the default), got ", n);
  std::lock_guard<std::mutex> lock(g_mu);
  set_locked(n);
}

int get_num_threads() {
  return static_cast<int>(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
}

int get_blas_num_threads() { return cpu::blas_num_threads(); }
std::string get_blas_core() { return cpu::blas_core(); }
std::string blas_core_advice() { return cpu::blas_core_advice(); }
std::string get_sgemm_backend() { return cpu::own_sgemm_enabled() ? "hkt" : "blas"; }

}  // namespace hkt
