// The main() of every doctest suite. HKT_TEST_EXCLUDE (comma-separated
// wildcards, doctest's --test-case-exclude) leaves test cases out of a run
// that only needs the others: tools/test.sh's ThreadSanitizer stage leaves out
// the float64 gradient checks, whose tiny shapes (one tile) run no parallel
// code that the other cases do not, and which take minutes under TSan. Filters
// given on the command line are applied as well.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>

int main(int argc, char** argv) {
  doctest::Context ctx;
  if (const char* ex = std::getenv("HKT_TEST_EXCLUDE"); ex && *ex) ctx.addFilter("test-case-exclude", ex);
  ctx.applyCommandLine(argc, argv);
  return ctx.run();
}
