#include "hkt/core/random.hpp"

namespace hkt {
Generator& default_generator() {
  static Generator g;
  return g;
}
void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }
}  // namespace hkt
