# cmake -DSRC=<source dir> -DOUT=<header> -DBUILD_TYPE=<type> -DBACKENDS=<list> -P build_info.cmake
# Writes OUT, the build's description for --version (tasks/apps/cli.hpp): the git revision
# of SRC (with "-dirty" for uncommitted changes), the build type and the backends built.
# The file is rewritten only when it changes, so that an unchanged build relinks nothing.
execute_process(COMMAND git -C "${SRC}" describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0 OR rev STREQUAL "")
  set(rev "unknown")  # a source tree without git (a release tarball)
endif()
file(WRITE "${OUT}.tmp" "// Written by tools/cmake/build_info.cmake at build time.\n#pragma once\n"
     "#define HKT_GIT_REVISION \"${rev}\"\n#define HKT_BUILD_TYPE \"${BUILD_TYPE}\"\n"
     "#define HKT_BACKENDS \"${BACKENDS}\"\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
