# cmake -DSRC=<source dir> -DOUT=<file.cpp> -DBUILD_TYPE=<type> -DBACKENDS=<list> -P build_info.cmake
# Writes OUT, the build's description for --version (tasks/apps/cli.hpp declares its functions):
# the git revision of SRC (with "-dirty" for uncommitted changes), the build type and the
# backends built. The file is rewritten only when it changes, and it is one small source of
# its own, so that a new revision recompiles it alone and relinks the executables.
execute_process(COMMAND git -C "${SRC}" describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0 OR rev STREQUAL "")
  set(rev "unknown")  # a source tree without git (a release tarball)
endif()
file(WRITE "${OUT}.tmp" "// Written by tools/cmake/build_info.cmake at build time.\n"
     "namespace hkt::apps {\n"
     "const char* build_git_revision() { return \"${rev}\"; }\n"
     "const char* build_type() { return \"${BUILD_TYPE}\"; }\n"
     "const char* build_backends() { return \"${BACKENDS}\"; }\n"
     "}  // namespace hkt::apps\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
