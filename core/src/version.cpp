#include "hkt/version.hpp"

namespace hkt {
const char* version() { return HKT_VERSION_STRING; }
}  // namespace hkt
