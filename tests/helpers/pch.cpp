// The owner of the suites' precompiled header (tests/CMakeLists.txt: hkt_test_pch).
// CMake builds the header from this target's flags; the suites reuse it.
