// A run's model, typed (hkt/tasks/model_spec.hpp): a preset and the fields set over it,
// their JSON at the file boundary (config.json's "model" and "model_overrides"), and a
// start that reads its model's config once.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "helpers/check.hpp"
#include "helpers/temp_dir.hpp"
#include "hkt/tasks/train.hpp"

using namespace hkt;
using namespace hkt::tasks;
using hkt::test::check_error;
using hkt::test::TempDir;

TEST_CASE("ModelSpec: typed changes over a preset, and the overrides config.json keeps") {
  ModelSpec m = "hkt-small";
  CHECK(m.preset() == "hkt-small");
  CHECK(m.config() == nn::ClassifierConfig::preset("hkt-small"));
  CHECK(m.overrides_json() == "{}");
  m.edit().attention.edit<nn::HKTOptions>().levels = 2;
  m.edit().dropout = 0.0;
  // What differs from the preset, in to_json's order.
  CHECK(m.overrides_json() == R"({"dropout":0.0,"levels":2})");
  // A key named by a file or a flag stays even at the preset's value; named keys come first,
  // in the order named.
  m.name_key("levels");
  m.name_key("dim");
  CHECK(m.overrides_json() == R"({"levels":2,"dim":128,"dropout":0.0})");
  // The file boundary: strict, and in the file's order.
  ModelSpec f = "hkt-small";
  f.apply_overrides(R"({"levels": 2, "dim": 128, "dropout": 0.0})");
  CHECK(f == m);
  CHECK(f.overrides_json() == m.overrides_json());
  check_error([&] { f.apply_overrides(R"({"depth": 3})"); }, "unknown key 'depth'");
  check_error([&] { f.apply_overrides(R"({"levels": "2"})"); }, "key 'levels' must be an integer");
  check_error([&] { f.apply_overrides(R"({"window": 8})"); },
              "key 'window' is an option of attention \"local\", and this model's attention is \"hkt\"");
  check_error([&] { f.apply_overrides("[1]"); }, "must be a JSON object");
  CHECK(f == m);  // a refused change leaves the model as it was
  // Another kind starts from its defaults (the preset's shared fields kept).
  ModelSpec p = "performer-small";
  p.apply_overrides(R"({"attention": "hkt", "levels": 2})");
  CHECK(p.config().attention.get<nn::HKTOptions>().levels == 2);
  CHECK(p.config().dim == 128);
  CHECK(p.config().ffn_mult == 7);
  check_error([] { ModelSpec bad = "hkt-huge"; }, "unknown preset 'hkt-huge'");
}

TEST_CASE("ModelSpec: another preset keeps what was set over the old one") {
  ModelSpec m = "hkt-tiny";
  m.apply_overrides(R"({"levels": 2, "dim": 32})");
  const ModelSpec s = m.with_preset("hkt-small");
  CHECK(s.preset() == "hkt-small");
  CHECK(s.config().dim == 32);
  CHECK(s.config().attention.get<nn::HKTOptions>().levels == 2);
  // An MHA preset has no levels: an Error, or (hkt-compare's shared flags) left out.
  check_error([&] { (void)m.with_preset("mha-tiny"); }, "key 'levels' is an option of attention \"hkt\"");
  const ModelSpec a = m.with_preset("mha-tiny", true);
  CHECK(a.config().attention.kind() == "mha");
  CHECK(a.config().dim == 32);
  CHECK(a.overrides_json() == R"({"dim":32})");
}

TEST_CASE("TrainConfig: model_overrides through JSON, and a start parses the model's config once") {
  TempDir dir("model_spec");
  const std::string text = R"({"task": "synthetic", "model": "hkt-tiny",
    "model_overrides": {"dropout": 0.0, "levels": 2},
    "data": {"train_size": 32, "val_size": 16, "test_size": 16, "seq_len": 16},
    "batch_size": 16, "steps": 2, "run_dir": ")" + dir.str("run") + R"("})";
  const int64_t before = nn::ClassifierConfig::from_json_count();
  const TrainConfig c = TrainConfig::from_json(text);
  CHECK(nn::ClassifierConfig::from_json_count() == before + 1);
  CHECK(c.model.config().attention.get<nn::HKTOptions>().levels == 2);
  // config.json's text: the overrides as the file gave them.
  CHECK(nlohmann::ordered_json::parse(c.to_json())["model_overrides"].dump() == R"({"dropout":0.0,"levels":2})");
  RunOptions o;
  o.quiet = true;
  const int64_t start = nn::ClassifierConfig::from_json_count();
  const TrainResult r = train(c, o);
  CHECK(r.completed);
  CHECK(nn::ClassifierConfig::from_json_count() == start);  // the trainer uses the typed config
  CHECK(TrainConfig::from_json(c.to_json()) == c);
  // Errors name the field, under TrainConfig's prefix.
  check_error([] { TrainConfig::from_json(R"({"task": "synthetic", "model": "mha-tiny", "steps": 1,
                                              "model_overrides": {"levels": 2}})"); },
              "TrainConfig: model_overrides: ClassifierConfig::from_json: key 'levels' is an option of attention "
              "\"hkt\"");
  check_error([] { TrainConfig::from_json(R"({"task": "synthetic", "steps": 1, "model_overrides": {"depth": 2}})"); },
              "TrainConfig: model_overrides: unknown key 'depth'");
}
