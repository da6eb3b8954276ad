// libFuzzer target for a checkpoint's metadata: the input is the
// "hkt.model_config" string of a safetensors file, which hkt-eval,
// hkt-analyze and --resume read back to build the model. The string must
// survive save_safetensors -> load_safetensors unchanged (or be refused with
// hkt::Error); ClassifierConfig::from_json and validate() must parse it or
// throw hkt::Error, whatever its size or depth; a config that passes and is
// small enough to build makes a model whose save_model -> load_model round
// trip holds finite weights. Anything else is a bug.
#include <cstdint>
#include <string>

#include "fuzz_util.hpp"
#include "hkt/core/error.hpp"
#include "hkt/core/safetensors.hpp"
#include "hkt/models/checkpoint.hpp"
#include "hkt/models/classifier.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/tasks/memory.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string meta(reinterpret_cast<const char*>(data), size);
  const auto dir = hkt_fuzz::fresh_dir();
  const std::string file = (dir / "m.safetensors").string();
  try {
    hkt::save_safetensors(file, {{"w", hkt::zeros({2})}}, {{"hkt.model_config", meta}, {"hkt.step", "1"}});
  } catch (const hkt::Error&) {
    return 0;  // not storable (invalid UTF-8): refused when written
  }
  const hkt::SafetensorsFile f = hkt::load_safetensors(file);
  const auto it = f.metadata.find("hkt.model_config");
  if (it == f.metadata.end() || it->second != meta) __builtin_trap();
  try {
    const hkt::nn::ClassifierConfig c = hkt::nn::ClassifierConfig::from_json(it->second);
    c.validate();
    // Only models of a few MiB are built (validate's bounds allow far larger ones).
    if (hkt::tasks::estimate_step_memory(c, 1, 1, 0, 0, false).weights > 8.0 * 1024 * 1024) return 0;
    hkt::nn::SequenceClassifier model(c);
    const std::string out = (dir / "model.safetensors").string();
    hkt::nn::save_model(out, model, {{"hkt.model_config", c.to_json()}});
    hkt::nn::SequenceClassifier again(hkt::nn::ClassifierConfig::from_json(hkt::load_safetensors(out).metadata.at(
        "hkt.model_config")));
    hkt::nn::load_model(out, again);
    if (!hkt::nn::first_non_finite(again.state_dict()).empty()) __builtin_trap();
  } catch (const hkt::Error&) {
  }
  return 0;
}
