// hkt's version. CMake checks at configure time that these numbers equal the
// project's VERSION (top CMakeLists.txt), and find_package(hkt X.Y) checks
// the installed package's version against X.Y.
#pragma once

#define HKT_VERSION_MAJOR 0
#define HKT_VERSION_MINOR 1
#define HKT_VERSION_PATCH 0
#define HKT_VERSION_STRING "0.1.0"
// One integer for comparisons: MAJOR * 10000 + MINOR * 100 + PATCH.
#define HKT_VERSION (HKT_VERSION_MAJOR * 10000 + HKT_VERSION_MINOR * 100 + HKT_VERSION_PATCH)

namespace hkt {
// The version of the library actually linked (may differ from the header's
// HKT_VERSION_STRING if a program is built against one install and run
// against another shared library).
const char* version();
}  // namespace hkt
