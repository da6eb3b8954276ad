// libFuzzer target for the experiment files of hkt-experiment:
// Experiment::from_json. Every input must parse or throw hkt::Error, whatever
// its size or nesting; each run of a file that parses has a config that
// survives to_json -> from_json unchanged. Anything else is a bug.
#include <cstdint>
#include <string>

#include "hkt/core/error.hpp"
#include "hkt/tasks/experiment.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const hkt::tasks::Experiment e = hkt::tasks::Experiment::from_json(text, "out");
    for (const hkt::tasks::ExperimentRun& r : e.runs)
      if (!(hkt::tasks::TrainConfig::from_json(r.cfg.to_json()) == r.cfg)) __builtin_trap();
  } catch (const hkt::Error&) {
  }
  return 0;
}
