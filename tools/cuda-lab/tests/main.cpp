// doctest's runner for the lab's checks (tools/cuda-lab/tests/CMakeLists.txt).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
