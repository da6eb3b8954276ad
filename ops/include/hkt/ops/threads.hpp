// The number of CPU threads the kernels use (oneTBB). Defaults to all cores,
// or to the environment variable HKT_NUM_THREADS when set. Results do not
// depend on it: kernels split work by fixed grain sizes and merge partial
// results in a fixed order.
#pragma once

namespace hkt {

// n >= 1; n = 0 removes the limit (all cores), even when HKT_NUM_THREADS is set.
void set_num_threads(int n);
int get_num_threads();

// The number of threads OpenBLAS runs for matrix products. It is OpenBLAS's own
// setting (OPENBLAS_NUM_THREADS, else all cores): set_num_threads and
// HKT_NUM_THREADS do not change it, and it changes the last bits of large
// products, so a run records it (summary.json's "blas_threads").
int get_blas_num_threads();

}  // namespace hkt
