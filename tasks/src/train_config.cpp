// TrainConfig (train.hpp): its checks, and its JSON (config.json, --config),
// read strictly: an unknown key or a value of the wrong type is an error naming it.
#include <cmath>
#include <limits>

#include "hkt/core/json_read.hpp"
#include "train_run.hpp"

namespace hkt::tasks {
namespace detail {
namespace {

template <class F>
void each_key(const json& j, const std::string& where, F&& f) {
  HKT_CHECK(j.is_object(), kCfg, where.empty() ? "the config" : "'" + where + "'", " must be a JSON object, got ",
            j.type_name());
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = where.empty() ? it.key() : where + "." + it.key();
    HKT_CHECK(f(it.key(), it.value(), key), kCfg, "unknown key '", key, "'");
  }
}

void get(const json& v, const std::string& key, std::string& out) {
  HKT_CHECK(v.is_string(), kCfg, "'", key, "' must be a string, got ", excerpt(v.dump()));
  out = v.get<std::string>();
}
void get(const json& v, const std::string& key, int64_t& out) {
  HKT_CHECK(v.is_number_integer(), kCfg, "'", key, "' must be an integer, got ", excerpt(v.dump()));
  HKT_CHECK(!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()), kCfg,
            "'", key, "' is out of range: ", excerpt(v.dump()));
  out = v.get<int64_t>();
}
void get(const json& v, const std::string& key, int& out) {
  int64_t x = 0;
  get(v, key, x);
  HKT_CHECK(x >= std::numeric_limits<int>::min() && x <= std::numeric_limits<int>::max(), kCfg, "'", key,
            "' is out of range: ", x);
  out = static_cast<int>(x);
}
void get(const json& v, const std::string& key, uint64_t& out) {
  HKT_CHECK(v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0), kCfg, "'", key,
            "' must be a non-negative integer, got ", excerpt(v.dump()));
  out = v.get<uint64_t>();
}
void get(const json& v, const std::string& key, double& out) {
  HKT_CHECK(v.is_number(), kCfg, "'", key, "' must be a number, got ", excerpt(v.dump()));
  out = v.get<double>();
}

json data_json(const TaskOptions& d) {
  json j{{"data_dir", d.data_dir},   {"seq_len", d.seq_len},     {"train_size", d.train_size},
         {"val_size", d.val_size},   {"test_size", d.test_size}, {"max_depth", d.max_depth},
         {"max_args", d.max_args},   {"min_len", d.min_len},     {"max_len", d.max_len},
         {"seed", d.seed}};
  // Only a text task's config has "text" (the other tasks' config.json stay as they were).
  if (d.text.set()) {
    const TextTaskOptions& t = d.text;
    j["text"] = {{"train", t.train},         {"val", t.val},           {"test", t.test},
                 {"text_column", t.text_column}, {"label_column", t.label_column}, {"header", t.header},
                 {"tokenizer", t.tokenizer}, {"vocab_file", t.vocab_file}, {"truncate", t.truncate},
                 {"classes", t.classes}};
  }
  // Only a tokens / series task's config has "arrays".
  if (d.arrays.set()) {
    const ArrayTaskOptions& a = d.arrays;
    j["arrays"] = {{"train", a.train},           {"val", a.val},
                   {"test", a.test},             {"train_labels", a.train_labels},
                   {"val_labels", a.val_labels}, {"test_labels", a.test_labels},
                   {"vocab_size", a.vocab_size}, {"pad_id", a.pad_id},
                   {"classes", a.classes}};
  }
  return j;
}

void get(const json& v, const std::string& key, bool& out) {
  HKT_CHECK(v.is_boolean(), kCfg, "'", key, "' must be true or false, got ", excerpt(v.dump()));
  out = v.get<bool>();
}

void get(const json& v, const std::string& key, std::vector<std::string>& out) {
  HKT_CHECK(v.is_array(), kCfg, "'", key, "' must be a list of strings, got ", excerpt(v.dump()));
  out.clear();
  for (const json& e : v) {
    HKT_CHECK(e.is_string(), kCfg, "'", key, "' must be a list of strings, got ", excerpt(v.dump()));
    out.push_back(e.get<std::string>());
  }
}

void read_text_options(const json& v, TextTaskOptions& t) {
  each_key(v, "data.text", [&](const std::string& k, const json& tv, const std::string& key) {
    if (k == "train") get(tv, key, t.train);
    else if (k == "val") get(tv, key, t.val);
    else if (k == "test") get(tv, key, t.test);
    else if (k == "text_column") get(tv, key, t.text_column);
    else if (k == "label_column") get(tv, key, t.label_column);
    else if (k == "header") get(tv, key, t.header);
    else if (k == "tokenizer") get(tv, key, t.tokenizer);
    else if (k == "vocab_file") get(tv, key, t.vocab_file);
    else if (k == "truncate") get(tv, key, t.truncate);
    else if (k == "classes") get(tv, key, t.classes);
    else return false;
    return true;
  });
}

void read_array_options(const json& v, ArrayTaskOptions& a) {
  each_key(v, "data.arrays", [&](const std::string& k, const json& av, const std::string& key) {
    if (k == "train") get(av, key, a.train);
    else if (k == "val") get(av, key, a.val);
    else if (k == "test") get(av, key, a.test);
    else if (k == "train_labels") get(av, key, a.train_labels);
    else if (k == "val_labels") get(av, key, a.val_labels);
    else if (k == "test_labels") get(av, key, a.test_labels);
    else if (k == "vocab_size") get(av, key, a.vocab_size);
    else if (k == "pad_id") get(av, key, a.pad_id);
    else if (k == "classes") get(av, key, a.classes);
    else return false;
    return true;
  });
}

}  // namespace

json config_json(const TrainConfig& c) {
  json j;
  j["task"] = c.task;
  j["data"] = data_json(c.data);
  j["model"] = c.model.preset();
  j["model_overrides"] = json::parse(c.model.overrides_json());
  j["batch_size"] = c.batch_size;
  j["steps"] = c.steps;
  j["epochs"] = c.epochs;
  j["lr"] = c.lr;
  j["weight_decay"] = c.weight_decay;
  j["decay"] = c.decay;
  j["warmup"] = c.warmup;
  j["schedule"] = c.schedule;
  j["min_lr_factor"] = c.min_lr_factor;
  j["clip_norm"] = c.clip_norm;
  j["log_every"] = c.log_every;
  j["eval_every"] = c.eval_every;
  j["eval_batches"] = c.eval_batches;
  j["checkpoint_every"] = c.checkpoint_every;
  if (c.eval_test_every != 0) j["eval_test_every"] = c.eval_test_every;  // absent: the files of earlier runs
  j["seed"] = c.seed;
  j["threads"] = c.threads;
  j["run_dir"] = c.run_dir;
  return j;
}

json parse_json(const std::string& text, const std::string& what) { return read_json<json>(text, what); }

}  // namespace detail

using namespace detail;

void TrainConfig::validate() const {
  HKT_CHECK(!task.empty(), kCfg, "task is empty");
  check_task_name(task, kCfg);
  {
    try {
      // The task fills in vocab / input_features later; check everything else now.
      nn::ClassifierConfig mc = model.config();
      if (mc.vocab == 0 && mc.input_features == 0) mc.vocab = 1;
      if (data.seq_len > 0) mc.max_len = data.seq_len;  // the levels' bound depends on T
      mc.validate();
    } catch (const Error& e) {
      throw Error(str_cat(kCfg, "model_overrides: ", e.what()));
    }
  }
  HKT_CHECK(batch_size >= 1, kCfg, "batch_size must be >= 1, got ", batch_size);
  HKT_CHECK(steps >= 0 && epochs >= 0 && (steps > 0 || epochs > 0), kCfg,
            "set steps > 0 or epochs > 0 (got steps ", steps, ", epochs ", epochs, ")");
  HKT_CHECK(std::isfinite(lr) && lr > 0, kCfg, "lr must be > 0, got ", lr);
  HKT_CHECK(std::isfinite(weight_decay) && weight_decay >= 0, kCfg, "weight_decay must be >= 0, got ", weight_decay);
  HKT_CHECK(warmup >= 0, kCfg, "warmup must be >= 0, got ", warmup);
  HKT_CHECK(schedule == "constant" || schedule == "cosine" || schedule == "linear", kCfg, "schedule must be "
            "\"constant\", \"cosine\" or \"linear\", got \"", schedule, "\"");
  HKT_CHECK(min_lr_factor >= 0 && min_lr_factor <= 1, kCfg, "min_lr_factor must be in [0, 1], got ", min_lr_factor);
  HKT_CHECK(std::isfinite(clip_norm) && clip_norm >= 0, kCfg, "clip_norm must be >= 0, got ", clip_norm);
  HKT_CHECK(log_every >= 0, kCfg, "log_every must be >= 0, got ", log_every);
  HKT_CHECK(eval_every >= 0, kCfg, "eval_every must be >= 0, got ", eval_every);
  HKT_CHECK(eval_batches >= 0, kCfg, "eval_batches must be >= 0, got ", eval_batches);
  HKT_CHECK(eval_test_every >= 0, kCfg, "eval_test_every must be >= 0, got ", eval_test_every);
  HKT_CHECK(checkpoint_every >= 0, kCfg, "checkpoint_every must be >= 0, got ", checkpoint_every);
  HKT_CHECK(threads >= 0, kCfg, "threads must be >= 0, got ", threads);
  HKT_CHECK(data.seq_len >= 0 && data.train_size >= 0 && data.val_size >= 0 && data.test_size >= 0 &&
                data.max_depth >= 0 && data.max_args >= 0 && data.min_len >= 0 && data.max_len >= 0,
            kCfg, "data sizes must be >= 0");
  HKT_CHECK(decay == "weights" || decay == "matrices", kCfg,
            "decay must be \"weights\" or \"matrices\" (which parameters weight decay applies to), got \"", decay,
            "\"");
  // Stated limits, checked before anything is allocated (the memory a run needs is checked too, in train()).
  const auto limit = [](const char* name, int64_t v, int64_t max) {
    HKT_CHECK(v <= max, kCfg, name, " must be <= ", max, ", got ", v);
  };
  limit("batch_size", batch_size, kMaxBatch);
  limit("steps", steps, kMaxSteps);
  limit("epochs", epochs, kMaxEpochs);
  limit("warmup", warmup, kMaxSteps);
  limit("threads", threads, 1024);
  limit("data.seq_len", data.seq_len, nn::ClassifierConfig::kMaxLen);
  limit("data.train_size", data.train_size, kMaxExamples);
  limit("data.val_size", data.val_size, kMaxExamples);
  limit("data.test_size", data.test_size, kMaxExamples);
  limit("data.max_depth", data.max_depth, 1024);
  limit("data.max_args", data.max_args, 1024);
  HKT_CHECK(task != "text" || data.text.set(), kCfg,
            "task 'text' needs a training file (data.text.train, hkt-train --train-file)");
  HKT_CHECK(task == "text" || !data.text.set(), kCfg, "data.text applies to the 'text' task only, not '", task, "'");
  if (data.text.set()) {
    const TextTaskOptions& t = data.text;
    HKT_CHECK(t.tokenizer == "bytes" || t.tokenizer == "chars" || t.tokenizer == "vocab", kCfg,
              "data.text.tokenizer must be \"bytes\", \"chars\" or \"vocab\", got \"", t.tokenizer, "\"");
    HKT_CHECK(t.truncate == "head" || t.truncate == "tail" || t.truncate == "refuse", kCfg,
              "data.text.truncate must be \"head\", \"tail\" or \"refuse\", got \"", t.truncate, "\"");
    HKT_CHECK(t.tokenizer != "vocab" || !t.vocab_file.empty(), kCfg,
              "data.text.tokenizer \"vocab\" needs data.text.vocab_file (hkt-train --vocab-file)");
  }
  const bool arrays = task == "tokens" || task == "series";
  HKT_CHECK(!arrays || data.arrays.set(), kCfg, "task '", task,
            "' needs a training file (data.arrays.train, hkt-train --train-file)");
  HKT_CHECK(arrays || !data.arrays.set(), kCfg, "data.arrays applies to the 'tokens' and 'series' tasks only, not '",
            task, "'");
  if (data.arrays.set()) {
    const ArrayTaskOptions& a = data.arrays;
    HKT_CHECK(a.vocab_size >= 0 && a.pad_id >= -1, kCfg, "data.arrays.vocab_size must be >= 0 and pad_id >= -1 (-1: ",
              "no padding), got ", a.vocab_size, " and ", a.pad_id);
    limit("data.arrays.vocab_size", a.vocab_size, nn::ClassifierConfig::kMaxVocab);
    HKT_CHECK(task == "tokens" || (a.vocab_size == 0 && a.pad_id == -1), kCfg,
              "data.arrays.vocab_size and pad_id (--vocab-size, --pad-id) apply to the tokens task only");
  }
}

std::string TrainConfig::to_json() const { return config_json(*this).dump(2); }

TrainConfig TrainConfig::from_json(const std::string& text) {
  TrainConfig c = from_json_unvalidated(text);
  c.validate();
  return c;
}

TrainConfig TrainConfig::from_json_unvalidated(const std::string& text) {
  const json j = parse_json(text, "TrainConfig");
  TrainConfig c;
  std::string preset = c.model.preset(), overrides;  // read last: the preset first, then what is set over it
  each_key(j, "", [&](const std::string& k, const json& v, const std::string& key) {
    if (k == "task") get(v, key, c.task);
    else if (k == "data") {
      each_key(v, "data", [&](const std::string& dk, const json& dv, const std::string& dkey) {
        if (dk == "data_dir") get(dv, dkey, c.data.data_dir);
        else if (dk == "seq_len") get(dv, dkey, c.data.seq_len);
        else if (dk == "train_size") get(dv, dkey, c.data.train_size);
        else if (dk == "val_size") get(dv, dkey, c.data.val_size);
        else if (dk == "test_size") get(dv, dkey, c.data.test_size);
        else if (dk == "max_depth") get(dv, dkey, c.data.max_depth);
        else if (dk == "max_args") get(dv, dkey, c.data.max_args);
        else if (dk == "min_len") get(dv, dkey, c.data.min_len);
        else if (dk == "max_len") get(dv, dkey, c.data.max_len);
        else if (dk == "seed") get(dv, dkey, c.data.seed);
        else if (dk == "text") read_text_options(dv, c.data.text);
        else if (dk == "arrays") read_array_options(dv, c.data.arrays);
        else return false;
        return true;
      });
    } else if (k == "model") get(v, key, preset);
    else if (k == "model_overrides") {
      HKT_CHECK(v.is_object(), kCfg, "'model_overrides' must be a JSON object, got ", excerpt(v.dump()));
      overrides = v.dump();
    } else if (k == "batch_size") get(v, key, c.batch_size);
    else if (k == "steps") get(v, key, c.steps);
    else if (k == "epochs") get(v, key, c.epochs);
    else if (k == "lr") get(v, key, c.lr);
    else if (k == "weight_decay") get(v, key, c.weight_decay);
    else if (k == "decay") get(v, key, c.decay);
    else if (k == "warmup") get(v, key, c.warmup);
    else if (k == "schedule") get(v, key, c.schedule);
    else if (k == "min_lr_factor") get(v, key, c.min_lr_factor);
    else if (k == "clip_norm") get(v, key, c.clip_norm);
    else if (k == "log_every") get(v, key, c.log_every);
    else if (k == "eval_every") get(v, key, c.eval_every);
    else if (k == "eval_batches") get(v, key, c.eval_batches);
    else if (k == "checkpoint_every") get(v, key, c.checkpoint_every);
    else if (k == "eval_test_every") get(v, key, c.eval_test_every);
    else if (k == "seed") get(v, key, c.seed);
    else if (k == "threads") get(v, key, c.threads);
    else if (k == "run_dir") get(v, key, c.run_dir);
    else return false;
    return true;
  });
  c.model = preset;  // an unknown preset: the Error lists the known ones
  if (!overrides.empty()) {
    try {
      c.model.apply_overrides(overrides);
    } catch (const Error& e) {
      throw Error(str_cat(kCfg, "model_overrides: ", e.what()));
    }
  }
  return c;
}

nn::ClassifierConfig TrainConfig::model_config(const Dataset& train) const {
  nn::ClassifierConfig c = model.config();
  fill_model_config(c, train);
  return c;
}


}  // namespace hkt::tasks
