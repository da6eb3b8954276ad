// The model of a run (TrainConfig::model): a ClassifierConfig preset and the
// fields set over it, typed. The task fills in vocab or input_features,
// classes and max_len once its data is loaded (TrainConfig::model_config).
//
//   tasks::TrainConfig c;
//   c.model = "hkt-small";                                    // a preset
//   c.model.edit().dropout = 0.0;                              // a shared field
//   c.model.edit().attention.edit<nn::HKTOptions>().levels = 2;  // a kind's option (Error if not "hkt")
//
// config.json keeps the preset's name ("model") and the fields set over it
// ("model_overrides": every field that differs from the preset, and every key
// named over it by a file or a flag even where it equals the preset's value).
#pragma once
#include <string>
#include <vector>

#include "hkt/models/classifier.hpp"

namespace hkt::tasks {

class ModelSpec {
 public:
  ModelSpec(const std::string& preset = "hkt-tiny");  // Error naming the known presets if unknown
  ModelSpec(const char* preset) : ModelSpec(std::string(preset)) {}

  const std::string& preset() const { return preset_; }
  const nn::ClassifierConfig& config() const { return config_; }
  nn::ClassifierConfig& edit() { return config_; }

  // The file boundary: a JSON object of ClassifierConfig keys set over the preset, read
  // strictly (an unknown key, a wrong type or another kind's option is an Error naming it).
  // A new "attention" starts from that kind's defaults (the preset's other fields kept).
  void apply_overrides(const std::string& json_object);
  // Another preset with what was set over this one: a new --model after a --config file, or
  // each of hkt-compare's --models. drop_other_kinds: an option of another attention kind
  // than the new model's is left out (hkt-compare's --levels is for its HKT models), not an
  // Error.
  ModelSpec with_preset(const std::string& preset, bool drop_other_kinds = false) const;
  // The same keys back: JSON text of an object, the named keys first in the order they were
  // named (a file's order, or the flags'), then any other field that differs from the preset.
  std::string overrides_json() const;
  // Keeps `key` in overrides_json() even where it equals the preset's value (a flag or a
  // file named it).
  void name_key(const std::string& key);

  // The same preset and the same model (which keys were named aside).
  bool operator==(const ModelSpec& o) const { return preset_ == o.preset_ && config_ == o.config_; }

 private:
  std::string preset_;
  nn::ClassifierConfig config_;
  std::vector<std::string> named_;  // in the order named, unique
};

}  // namespace hkt::tasks
