// The number of CPU threads the kernels use (oneTBB). Defaults to all cores,
// or to the environment variable HKT_NUM_THREADS when set. Results do not
// depend on it: kernels split work by fixed grain sizes and merge partial
// results in a fixed order.
#pragma once

namespace hkt {

// n >= 1; n = 0 removes the limit (all cores), even when HKT_NUM_THREADS is set.
void set_num_threads(int n);
int get_num_threads();

}  // namespace hkt
