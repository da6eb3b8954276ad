// hkt-train-faults: hkt-train with faults injected from outside the library, for the tests
// that check how a job reacts to them (tasks/apps/train_main.hpp runs hkt-train's own command
// line; the faults go in through RunOptions::after_step and the distributed layer's switch).
//   HKT_TEST_DIVERGE=1         in a job of several ranks, rank 1 flips one bit of its first
//                              weight after step 1; the next agreement check must stop the job
//                              (tests/distributed_test.sh, diverge)
//   HKT_TEST_NCCL_ONE_RANK=1   a process alone on a GPU sums its gradient buckets with a one-rank
//                              NCCL communicator (tests/distributed_gpu_test.sh)
#include <cstdlib>
#include <string>

#include "hkt/core/error.hpp"
#include "hkt/tasks/distributed.hpp"
#include "train_main.hpp"

namespace {

bool on(const char* name) {
  const char* v = std::getenv(name);
  return v && std::string(v) == "1";
}

}  // namespace

int main(int argc, char** argv) {
  return hkt::apps::train_main(argc, argv, [](hkt::tasks::RunOptions& ropt) {
    if (on("HKT_TEST_NCCL_ONE_RANK")) hkt::tasks::sum_buckets_alone_with_nccl(true);
    if (on("HKT_TEST_DIVERGE")) {
      const hkt::tasks::World& w = hkt::tasks::world();
      if (w.size > 1 && w.rank == 1)
        ropt.after_step = [](int64_t step, hkt::nn::SequenceClassifier& model) {
          if (step != 1) return;
          const hkt::Tensor p = model.parameters().front();
          HKT_CHECK(p.device().is_cpu() && p.is_contiguous() && p.numel() > 0, "HKT_TEST_DIVERGE: a CPU model is needed");
          static_cast<unsigned char*>(p.raw_data())[0] ^= 1;
        };
    }
  });
}
