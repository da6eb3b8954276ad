// The number of CPU threads the kernels use (oneTBB). Defaults to all cores,
// or to the environment variable HKT_NUM_THREADS when set. Results do not
// depend on it: kernels split work by fixed grain sizes and merge partial
// results in a fixed order.
#pragma once
#include <string>

namespace hkt {

// n >= 1; n = 0 removes the limit (all cores), even when HKT_NUM_THREADS is set.
void set_num_threads(int n);
int get_num_threads();

// The number of threads OpenBLAS runs for matrix products. It is OpenBLAS's own
// setting (OPENBLAS_NUM_THREADS, else all cores): set_num_threads and
// HKT_NUM_THREADS do not change it, and where OpenBLAS runs the products (float64, or float32
// with get_sgemm_backend() == "blas") it changes the last bits of large
// products, so a run records it (summary.json's "blas_threads"). With two or more, the
// library shortens the time OpenBLAS's idle threads spin before they sleep
// (OPENBLAS_THREAD_TIMEOUT=16, set before the first product unless the user set it;
// docs/design.md): the same bits.
int get_blas_num_threads();

// The kernel set OpenBLAS chose for this CPU when it loaded ("Haswell", "SkylakeX", ...;
// OPENBLAS_CORETYPE, read when OpenBLAS loads, overrides its choice). Another
// kernel set changes the last bits of products, so a run records it (summary.json's
// "blas_core").
std::string get_blas_core();
// A sentence for the user when float32 products run in OpenBLAS (HKT_SGEMM=blas) with its AVX2
// kernels on an AVX-512 CPU (chosen by OPENBLAS_CORETYPE, or by an OpenBLAS that does not know
// the CPU: half the products' rate); empty otherwise.
std::string blas_core_advice();

// What runs float32 matrix products: "hkt" (the library's own AVX-512 kernel, on CPUs with
// AVX-512F: every output one FMA chain over k in order, so the bits do not depend on any thread
// count) or "blas" (OpenBLAS: without AVX-512F, or when the environment has HKT_SGEMM=blas).
// float64 products always run in BLAS. A run records it (summary.json's "sgemm").
std::string get_sgemm_backend();

}  // namespace hkt
