// libFuzzer target for the JSON configs: TrainConfig::from_json (the run
// folders' config.json, hkt-train --config) and ClassifierConfig::from_json.
// Every input must parse or throw hkt::Error; anything else is a bug. A
// config that parses must survive to_json -> from_json unchanged.
#include <string>

#include "hkt/core/error.hpp"
#include "hkt/models/classifier.hpp"
#include "hkt/tasks/train.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const hkt::tasks::TrainConfig c = hkt::tasks::TrainConfig::from_json(text);
    const std::string again = c.to_json();
    if (hkt::tasks::TrainConfig::from_json(again).to_json() != again) __builtin_trap();
  } catch (const hkt::Error&) {
  }
  try {
    const hkt::nn::ClassifierConfig c = hkt::nn::ClassifierConfig::from_json(text);
    try {
      c.validate();
    } catch (const hkt::Error&) {
    }
    const std::string again = c.to_json();
    if (hkt::nn::ClassifierConfig::from_json(again).to_json() != again) __builtin_trap();
  } catch (const hkt::Error&) {
  }
  return 0;
}
