// The training options shared by hkt-train and hkt-compare: each one a
// command-line flag that, when given, overrides the TrainConfig (defaults or
// --config FILE).
#pragma once
#include <CLI/CLI.hpp>
#include <charconv>
#include <limits>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hkt/core/error.hpp"
#include "hkt/kernels/cuda.hpp"
#include "hkt/tasks/train.hpp"
#include "cli.hpp"

namespace hkt::apps {

// The device named by a --device value ("cpu" or "cuda"); throws
// tasks::InputError (exit status 2) when CUDA is asked for but not available
// (no CUDA build, no driver or no GPU).
inline Device device_from_flag(const std::string& name) {
  if (name != "cuda") return Device::cpu();
  if (!cuda_is_available())
    throw tasks::InputError("--device cuda: CUDA is not available: " + cuda_unavailable_reason() +
                            " (use --device cpu)");
  return Device::cuda();
}

// Adds --device (cpu or cuda) to `app`, stored in `target`.
inline void add_device_flag(CLI::App& app, std::string& target) {
  app.add_option("--device", target, "where to train: cpu, or cuda (needs a GPU and a CUDA build)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
}

class TrainOptions {
 public:
  // Adds the flags to `app`. with_model: also --model (the preset).
  void add(CLI::App& app, bool with_model = true) {
    using C = tasks::TrainConfig;
    using D = tasks::TaskOptions;
    // A flag given twice takes the last value (tools/quickstart.sh appends the user's flags).
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app.add_option("--config", config_file_,
                   with_model ? "JSON file with TrainConfig values (the flags override them)"
                              : "JSON file with TrainConfig values (the flags override them; its model and "
                                "run_dir are replaced by --models and --run-dir)")
        ->check(CLI::ExistingFile);
    flag(app, "--task", &C::task,
         "task: synthetic, listops, listops-tsv, cifar10, cifar10-rgb, fashion-mnist, imdb, text, tokens, series");
    data_flag(app, "--data-dir", &D::data_dir,
              "data folder for file-based tasks (default ${HKT_DATA:-$HOME/.cache/hkt/data})");
    data_flag(app, "--seq-len", &D::seq_len, "sequence length of generated/text/tokens/series tasks (0 = task default)");
    data_flag(app, "--train-size", &D::train_size,
              "generated tasks: training examples; file tasks: at most this many (0 = default/all)");
    data_flag(app, "--val-size", &D::val_size, "validation examples (0 = task default)");
    data_flag(app, "--test-size", &D::test_size,
              "test examples: generated tasks make this many; file tasks use a seeded subset of their test "
              "split (0 = default/all)");
    data_flag(app, "--max-depth", &D::max_depth, "ListOps nesting depth (0 = default)");
    data_flag(app, "--max-args", &D::max_args, "ListOps arguments per operator (0 = default)");
    data_flag(app, "--min-len", &D::min_len,
              "ListOps: shortest expression in tokens (LRA's min_length; 0 = no minimum)");
    data_flag(app, "--max-len", &D::max_len, "ListOps: longest expression in tokens (LRA's max_length; 0 = --seq-len)");
    data_flag(app, "--data-seed", &D::seed, "seed of data generation and the validation split");
    // The text, tokens and series tasks (docs/tasks.md, "Your own data"). --train-file, --val-file,
    // --test-file and --classes are shared: resolve() moves them to data.arrays for tokens / series.
    using X = tasks::TextTaskOptions;
    text_flag(app, "--train-file", &X::train,
              "text: the labelled training file (.tsv, .txt or .csv); tokens, series: a .npz or .safetensors "
              "file of arrays inputs, labels (and lengths), or a .npy of inputs (with --train-labels)");
    text_flag(app, "--val-file", &X::val, "text, tokens, series: the validation file (default: carved from "
                                          "--train-file)");
    text_flag(app, "--test-file", &X::test, "text, tokens, series: the test file (default: carved from "
                                            "--train-file)");
    text_flag(app, "--text-column", &X::text_column, "text task: the text column (a header name, or a 0-based "
                                                     "number with --no-header)");
    text_flag(app, "--label-column", &X::label_column, "text task: the label column (name or number)");
    text_flag(app, "--tokenizer", &X::tokenizer,
              "text task: bytes (UTF-8 bytes), chars (Unicode characters of the training text) or vocab "
              "(whitespace-separated words of --vocab-file)");
    text_flag(app, "--vocab-file", &X::vocab_file, "text task: one word a line (--tokenizer vocab)");
    text_flag(app, "--truncate", &X::truncate, "text task: a text longer than --seq-len: head (keep the first "
                                               "tokens), tail (the last) or refuse (an error)");
    text_flag(app, "--classes", &X::classes, "text: the class names in class order (default: the training labels, "
                                             "sorted); tokens, series: the names of labels 0, 1, ... (default: the "
                                             "numbers)")
        ->delimiter(',');
    using A = tasks::ArrayTaskOptions;
    array_flag(app, "--train-labels", &A::train_labels, "tokens, series: the labels .npy of a .npy --train-file");
    array_flag(app, "--val-labels", &A::val_labels, "tokens, series: the labels .npy of a .npy --val-file");
    array_flag(app, "--test-labels", &A::test_labels, "tokens, series: the labels .npy of a .npy --test-file");
    array_flag(app, "--vocab-size", &A::vocab_size,
               "tokens: ids are in [0, this) (default 0: the training file's largest id + 1)");
    array_flag(app, "--pad-id", &A::pad_id,
               "tokens: trailing ids equal to this are padding, not tokens (default -1: none; or give lengths)");
    {
      CLI::Option* o = app.add_flag("--no-header", no_header_, "text task: the files have no header row");
      setters_.emplace_back(o, [](tasks::TrainConfig& d) { d.data.text.header = false; });
    }
    if (with_model) {
      auto preset = std::make_shared<std::string>(tmp_.model.preset());
      CLI::Option* o = app.add_option("--model", *preset, "model preset: hkt-small, mha-small, mha-matched, local-small, performer-small, htr-small, hkt-tiny, mha-tiny")
                           ->capture_default_str();
      // A new preset keeps what a --config file set over the old one.
      setters_.emplace_back(o, [preset](tasks::TrainConfig& d) { d.model = d.model.with_preset(*preset); });
      holders_.push_back(preset);
    }
    {
      // Typed, in this order (the kind first, so that --levels meets the kind it is for).
      using M = nn::ClassifierConfig;
      model_flag<std::string>(app, "--attention", "attention",
                              "attention kind: hkt, mha, local, performer, htransformer (overrides the preset)",
                              [](M& c, const std::string& v) { c.attention = v; });
      model_flag<int64_t>(app, "--levels", "levels", "HKT resolution levels L (overrides the preset)",
                          [](M& c, int64_t v) { c.attention.edit<nn::HKTOptions>().levels = v; });
      model_flag<int64_t>(app, "--dim", "dim", "model width D (overrides the preset)", [](M& c, int64_t v) { c.dim = v; });
      model_flag<int64_t>(app, "--heads", "heads", "attention heads H (overrides the preset)",
                          [](M& c, int64_t v) { c.heads = v; });
      model_flag<int64_t>(app, "--layers", "layers", "blocks N (overrides the preset)",
                          [](M& c, int64_t v) { c.layers = v; });
      model_flag<double>(app, "--dropout", "dropout", "dropout probability (overrides the preset)",
                         [](M& c, double v) { c.dropout = v; });
    }
    flag(app, "--batch-size", &C::batch_size, "examples per step");
    flag(app, "--steps", &C::steps, "optimizer steps (wins over --epochs)");
    flag(app, "--epochs", &C::epochs, "epochs, used when --steps is 0 (both 0: one epoch)");
    flag(app, "--lr", &C::lr, "peak learning rate (AdamW)");
    flag(app, "--weight-decay", &C::weight_decay, "AdamW weight decay");
    flag(app, "--decay", &C::decay,
         "what weight decay applies to: weights (matrices of maps, embeddings, convolutions; default) or "
         "matrices (also the positional table and HKT's level logits)");
    flag(app, "--warmup", &C::warmup, "linear warm-up steps");
    flag(app, "--schedule", &C::schedule, "learning-rate decay: constant, cosine, linear");
    flag(app, "--min-lr-factor", &C::min_lr_factor, "final learning rate as a fraction of --lr");
    flag(app, "--clip-norm", &C::clip_norm, "gradient clipping max norm (0 = off)");
    flag(app, "--log-every", &C::log_every, "steps between train-metric lines (0 = none)");
    flag(app, "--eval-every", &C::eval_every,
         "steps between evaluations of the validation set, which picks the best checkpoint (0 = only at the end)");
    flag(app, "--eval-batches", &C::eval_batches, "batches per periodic evaluation (0 = all)");
    flag(app, "--eval-test-every", &C::eval_test_every,
         "steps between evaluations that also score the test set, for its curve (0 = the default: the test set is "
         "scored once, at the end, on the best checkpoint by validation)");
    flag(app, "--checkpoint-every", &C::checkpoint_every, "steps between checkpoints (0 = only at the end)");
    flag(app, "--seed", &C::seed, "seed of initial values, data order and dropout");
    flag(app, "--threads", &C::threads, "CPU threads (0 = all cores or HKT_NUM_THREADS)");
    // Not part of the config: a run may be resumed on another device.
    add_device_flag(app, device_);
  }

  // The --device given; throws tasks::InputError (exit status 2) when CUDA is
  // asked for but not available (no CUDA build, no driver or no GPU).
  Device device() const { return device_from_flag(device_); }

  // Defaults, then --config, then the flags given, then one epoch when neither
  // steps nor epochs is set. With `check`, validated; the error then names the
  // config file the values came from (with the flags), if any.
  tasks::TrainConfig resolve(bool check = true) const {
    tasks::TrainConfig base;
    if (!config_file_.empty()) {
      std::ifstream f(config_file_);
      if (!f) throw tasks::InputError("cannot read the config file '" + config_file_ + "'");
      std::stringstream ss;
      ss << f.rdbuf();
      try {
        // Validated by the caller once the flags are applied: a flag may complete the file.
        base = tasks::TrainConfig::from_json_unvalidated(ss.str());
      } catch (const Error& e) {
        throw tasks::InputError(std::string(config_file_) + ": " + e.what());
      }
    }
    try {
      for (const auto& [opt, apply] : setters_)
        if (opt->count() > 0) apply(base);
    } catch (const Error& e) {
      if (config_file_.empty()) throw tasks::InputError(e.what());
      throw tasks::InputError(config_file_ + " (with the flags given): " + e.what());
    }
    if (base.task == "tokens" || base.task == "series") {  // the shared file flags name arrays
      tasks::TextTaskOptions& t = base.data.text;
      tasks::ArrayTaskOptions& a = base.data.arrays;
      if (is_given("--train-file")) a.train = std::exchange(t.train, {});
      if (is_given("--val-file")) a.val = std::exchange(t.val, {});
      if (is_given("--test-file")) a.test = std::exchange(t.test, {});
      if (is_given("--classes")) a.classes = std::exchange(t.classes, {});
    }
    if (base.steps == 0 && base.epochs == 0) base.epochs = 1;
    if (check) {
      try {
        base.validate();
      } catch (const Error& e) {
        if (config_file_.empty()) throw tasks::InputError(e.what());
        throw tasks::InputError(config_file_ + " (with the flags given): " + e.what());
      }
    }
    return base;
  }
  // Flags given among the training options (for --resume, which takes none of them).
  std::vector<std::string> given() const {
    std::vector<std::string> out;
    if (!config_file_.empty()) out.push_back("--config");
    for (const auto& [opt, apply] : setters_)
      if (opt->count() > 0 && opt->get_name() != "--threads") out.push_back(opt->get_name());
    return out;
  }
  bool is_given(const std::string& name) const {
    for (const auto& [opt, apply] : setters_)
      if (opt->get_name() == name && opt->count() > 0) return true;
    return false;
  }
  bool threads_given() const {
    for (const auto& [opt, apply] : setters_)
      if (opt->get_name() == "--threads" && opt->count() > 0) return true;
    return false;
  }
  int threads() const { return tmp_.threads; }

 private:
  using Setter = std::function<void(tasks::TrainConfig&)>;
  // A CLI11 check: "-1" for a seed or a thread count is an error, not a wrapped value.
  static std::string non_negative(const std::string& v) {
    return !v.empty() && v[0] == '-' ? "must be >= 0, got " + v : std::string();
  }
  // A CLI11 check for an integer flag: a value outside T's range is refused, not clamped.
  template <class T>
  static std::string in_range(const std::string& v) {
    T x{};
    const char* end = v.data() + v.size();
    const auto [p, ec] = std::from_chars(v.data() + (v.size() > 1 && v[0] == '+'), end, x);
    if (ec == std::errc::result_out_of_range)
      return "out of range: " + v + " (limits " + std::to_string(std::numeric_limits<T>::min()) + " to " +
             std::to_string(std::numeric_limits<T>::max()) + ")";
    (void)p;
    return std::string();  // other malformed values: CLI11's conversion error
  }
  template <class T>
  static void check_integer(CLI::Option* o) {
    if constexpr (std::is_integral_v<T>) o->check(in_range<T>);
  }
  // A flag bound to a TrainConfig field (data_flag: a field of its TaskOptions):
  // parsed into tmp_, copied into the resolved config only when given.
  template <class T>
  void flag(CLI::App& app, const std::string& name, T tasks::TrainConfig::*field, const std::string& help) {
    CLI::Option* o = app.add_option(name, tmp_.*field, help)->capture_default_str();
    check_integer<T>(o);
    // Seeds are unsigned: "-1" would wrap. Thread counts are checked here too, for --resume.
    if constexpr (std::is_unsigned_v<T>) o->check(non_negative);
    if (name == "--threads") o->check(non_negative);
    setters_.emplace_back(o, [this, field](tasks::TrainConfig& d) { d.*field = tmp_.*field; });
  }
  template <class T>
  void data_flag(CLI::App& app, const std::string& name, T tasks::TaskOptions::*field, const std::string& help) {
    CLI::Option* o = app.add_option(name, tmp_.data.*field, help)->capture_default_str();
    check_integer<T>(o);
    if constexpr (std::is_unsigned_v<T>) o->check(non_negative);
    setters_.emplace_back(o, [this, field](tasks::TrainConfig& d) { d.data.*field = tmp_.data.*field; });
  }
  template <class T>
  CLI::Option* text_flag(CLI::App& app, const std::string& name, T tasks::TextTaskOptions::*field,
                         const std::string& help) {
    CLI::Option* o = app.add_option(name, tmp_.data.text.*field, help);
    setters_.emplace_back(o, [this, field](tasks::TrainConfig& d) { d.data.text.*field = tmp_.data.text.*field; });
    return o;
  }
  template <class T>
  void array_flag(CLI::App& app, const std::string& name, T tasks::ArrayTaskOptions::*field,
                  const std::string& help) {
    CLI::Option* o = app.add_option(name, tmp_.data.arrays.*field, help);
    check_integer<T>(o);
    setters_.emplace_back(o, [this, field](tasks::TrainConfig& d) { d.data.arrays.*field = tmp_.data.arrays.*field; });
  }
  // A model field set over the preset, typed, and named in config.json's model_overrides
  // (ClassifierConfig's JSON key `key`).
  template <class T>
  void model_flag(CLI::App& app, const std::string& name, const std::string& key, const std::string& help,
                  void (*set)(nn::ClassifierConfig&, std::conditional_t<std::is_same_v<T, std::string>, const T&, T>)) {
    auto value = std::make_shared<T>();
    CLI::Option* o = app.add_option(name, *value, help);
    check_integer<T>(o);
    setters_.emplace_back(o, [value, key, set, name](tasks::TrainConfig& d) {
      try {
        set(d.model.edit(), *value);
      } catch (const Error& e) {
        throw Error(str_cat(name, ": ", e.what()));
      }
      d.model.name_key(key);
    });
    holders_.push_back(value);
  }

  tasks::TrainConfig tmp_;
  bool no_header_ = false;
  std::string config_file_;
  std::string device_ = "cpu";
  std::vector<std::pair<CLI::Option*, Setter>> setters_;
  std::vector<std::shared_ptr<void>> holders_;
};

}  // namespace hkt::apps
