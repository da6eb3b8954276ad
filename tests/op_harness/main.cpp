// op_harness: every op on the op list through the harness (tests/helpers/op_harness.hpp).
// An entry per op: the list entries it exercises, its case generator (random
// shapes, non-contiguous and broadcast operands, size-1 and empty dims, and one
// case large enough to be split over threads), a bad input and worked examples,
// in its family's file (cases.hpp lists them). The elementwise entries are
// generated from the same lists as the ops (hkt/kernels/elementwise_defs.hpp).
// Linked against the emulated CUDA backend where the tree builds it, so the
// device comparisons run without a GPU; the exit status is the failure count.
#include <iostream>

#include "op_harness/cases.hpp"

using namespace hkt;
using namespace hkt::harness;

// Arguments: --complete runs only the completeness check of the op list;
// --require-device exits 77 (CTest: Skipped) when there is no CUDA device.
int main(int argc, char** argv) {
  bool complete_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--complete") {
      complete_only = true;
    } else if (a == "--require-device") {
      if (!cuda_is_available()) {
        std::cout << "op_harness: skipped: " << cuda_unavailable_reason() << "\n";
        return 77;
      }
    } else {
      std::cerr << "op_harness: unknown argument '" << a << "' (--complete, --require-device)\n";
      return 2;
    }
  }
  std::vector<OpEntry> entries;
  add_elementwise(entries);
  add_reduce(entries);
  add_nn(entries);
  add_factory(entries);
  add_index(entries);
  add_linalg(entries);
  add_optim(entries);
  add_attention(entries);
  add_htransformer(entries);
  add_local_attention(entries);
  Options opt;
  opt.require_every_registered_op = true;
  const int failures = complete_only ? 0 : run(entries, opt);
  // The completeness check of the op list: every kernel each built backend must have.
  const std::vector<std::string> missing = missing_kernels();
  for (const std::string& m : missing) std::cerr << "FAIL missing kernel: " << m << "\n";
  std::cout << "op list: " << registered_ops().size() << " kernel ops, " << missing.size() << " missing kernels\n";
  return failures + static_cast<int>(missing.size()) > 0 ? 1 : 0;
}
