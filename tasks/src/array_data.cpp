// A user's arrays as tokens / series examples (see hkt/tasks/array_data.hpp).
#include "hkt/tasks/array_data.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "hkt/core/error.hpp"
#include "hkt/models/classifier.hpp"

namespace hkt::tasks {
namespace {

using nlohmann::json;
using Limits = nn::ClassifierConfig;

void check_task(const std::string& task) {
  HKT_CHECK(task == "tokens" || task == "series", "arrays: unknown task '", task, "' (tokens, series)");
}

int64_t features_of(const NumArray& x) { return x.shape.size() == 3 ? x.shape[2] : 1; }

// The length of row r: from the lengths array, else (tokens with a pad id >= 0) the positions before
// the trailing pad ids, else T.
int64_t row_length(const ArraySource& s, int64_t r, int64_t pad_id) {
  const int64_t T = s.inputs.shape[1];
  if (s.lengths) {
    const int64_t n = s.lengths->int_at(r);
    HKT_CHECK(n >= 1 && n <= T, s.lengths->name, "[", r, "] = ", n, " is outside [1, ", T,
              "] (T, the inputs' second dimension)");
    return n;
  }
  if (pad_id < 0) return T;
  int64_t n = T;
  while (n > 0 && s.inputs.int_at(r * T + n - 1) == pad_id) --n;
  HKT_CHECK(n >= 1, s.inputs.name, ": row ", r, " is all padding (pad id ", pad_id, "); an example needs a token");
  return n;
}

std::string classes_str(const std::vector<std::string>& classes) {
  std::string s;
  for (size_t k = 0; k < classes.size() && k < 10; ++k)
    s += (k ? ", " : "") + std::to_string(k) + " '" + classes[k] + "'";
  return classes.size() > 10 ? s + ", ..." : s;
}

}  // namespace

void check_array_source(const std::string& task, const ArraySource& s, bool labelled) {
  check_task(task);
  const NumArray& x = s.inputs;
  if (task == "tokens") {
    HKT_CHECK(x.kind == 'i' || x.kind == 'u', x.name, ": token ids must be integers, got ", x.dtype(),
              x.kind == 'f' ? " (real-valued features are the series task: --task series)" : "");
    HKT_CHECK(x.shape.size() == 2, x.name, ": token ids must be a 2-D array [N, T], got shape ", x.shape_str());
  } else {
    HKT_CHECK(x.kind != 'b', x.name, ": features must be numbers, got bool");
    HKT_CHECK(x.shape.size() == 2 || x.shape.size() == 3, x.name,
              ": features must be a 3-D array [N, T, F] (or [N, T] for one feature), got shape ", x.shape_str());
    HKT_CHECK(features_of(x) <= Limits::kMaxFeatures, x.name, ": ", features_of(x), " features, more than ",
              Limits::kMaxFeatures);
  }
  for (size_t k = 0; k < x.shape.size(); ++k)
    HKT_CHECK(x.shape[k] >= 1, x.name, ": shape ", x.shape_str(), " is empty (no ",
              k == 0 ? "examples" : k == 1 ? "positions" : "features", ")");
  const auto per_row = [&](const NumArray& a, const char* what) {
    HKT_CHECK(a.is_integer(), a.name, ": ", what, " must be integers, got ", a.dtype());
    HKT_CHECK(a.shape.size() == 1, a.name, ": ", what, " must be a 1-D array [N], got shape ", a.shape_str());
    HKT_CHECK(a.shape[0] == x.shape[0], a.name, ": ", a.shape[0], " ", what, " for ", x.shape[0],
              " input rows (", x.name, " has shape ", x.shape_str(), ")");
  };
  if (labelled) {
    HKT_CHECK(s.labels.has_value(), s.path, ": no labels");
    per_row(*s.labels, "labels");
  }
  if (s.lengths) per_row(*s.lengths, "lengths");
}

ArraySource read_array_source(const std::string& task, const std::string& path, const std::string& labels_path,
                              bool labelled) {
  check_task(task);
  ArraySource s;
  s.path = path;
  const std::string format = array_format_of(path);
  if (format == "npy") {
    s.inputs = read_npy(path);
    if (labelled) {
      HKT_CHECK(!labels_path.empty(), "'", path, "': a .npy file holds the inputs only; give the labels as a .npy "
                "too (--train-labels, --val-labels, --test-labels), or inputs and labels in one .npz");
      HKT_CHECK(array_format_of(labels_path) == "npy", "'", labels_path, "': the labels of a .npy of inputs must be a "
                ".npy file");
      s.labels = read_npy(labels_path);
    }
  } else {
    HKT_CHECK(format == "npz" || format == "safetensors", "'", path, "': the format comes from the extension: .npz "
              "or .safetensors (arrays 'inputs', 'labels', 'lengths'), or .npy (the inputs alone)");
    HKT_CHECK(labels_path.empty(), "'", labels_path, "': a labels file goes with a .npy of inputs; ", path,
              " holds its own 'labels' array");
    std::vector<std::string> wanted = {"inputs", "lengths"};
    if (labelled) wanted.push_back("labels");
    ArrayFile f = read_array_file(path, wanted);
    for (const std::string& w : wanted) {
      if (w == "lengths" && !f.find(w)) continue;
      HKT_CHECK(f.find(w), path, ": no array '", w, "' (the file has: ", f.names_str(), ")");
    }
    s.inputs = std::move(f.arrays.at("inputs"));
    if (labelled) s.labels = std::move(f.arrays.at("labels"));
    if (f.find("lengths")) s.lengths = std::move(f.arrays.at("lengths"));
  }
  check_array_source(task, s, labelled);
  return s;
}

ArrayEncoding fit_array_encoding(const std::string& task, const ArraySource& s, const ArrayTaskOptions& opt,
                                 int64_t seq_len) {
  check_task(task);
  check_array_source(task, s, true);
  ArrayEncoding e;
  e.task = task;
  e.seq_len = seq_len > 0 ? seq_len : s.inputs.shape[1];
  HKT_CHECK(e.seq_len <= Limits::kMaxLen, s.inputs.name, ": seq_len ", e.seq_len, " is more than ", Limits::kMaxLen);
  const NumArray& y = *s.labels;
  int64_t top = -1;
  for (int64_t r = 0; r < y.size(); ++r) {
    const int64_t v = y.int_at(r);
    HKT_CHECK(v >= 0, y.name, "[", r, "] = ", v, " is negative (labels are classes 0..C-1)");
    top = std::max(top, v);
  }
  if (!opt.classes.empty()) {
    std::set<std::string> have;
    for (const std::string& c : opt.classes)
      HKT_CHECK(!c.empty() && have.insert(c).second, task, ": class name '", c, "' is empty or listed twice");
    e.classes = opt.classes;
  } else {
    HKT_CHECK(top < Limits::kMaxClasses, y.name, ": the largest label is ", top, ", more classes than ",
              Limits::kMaxClasses);
    for (int64_t c = 0; c <= top; ++c) e.classes.push_back(std::to_string(c));
  }
  HKT_CHECK(e.classes.size() >= 2, y.name, ": needs at least 2 classes, the labels hold ", e.classes.size());
  if (task == "tokens") {
    HKT_CHECK(opt.pad_id >= -1 && opt.pad_id < Limits::kMaxVocab, task, ": pad id ", opt.pad_id,
              " must be in [0, ", Limits::kMaxVocab, ") (or -1: no padding)");
    e.pad_id = opt.pad_id;
    if (opt.vocab_size > 0) {
      HKT_CHECK(opt.vocab_size <= Limits::kMaxVocab && e.pad_id < opt.vocab_size, task, ": vocabulary size ",
                opt.vocab_size, " must be at most ", Limits::kMaxVocab, " and above the pad id ", e.pad_id);
      e.vocab = opt.vocab_size;
    } else {
      const NumArray& x = s.inputs;
      const int64_t T = x.shape[1];
      int64_t top_id = e.pad_id, at = -1;
      for (int64_t r = 0; r < s.rows(); ++r) {
        const int64_t n = row_length(s, r, e.pad_id);
        for (int64_t t = 0; t < n; ++t) {
          const int64_t v = x.int_at(r * T + t);
          HKT_CHECK(v >= 0, x.name, x.index(r * T + t), " = ", v, " is a negative token id");
          if (v > top_id) top_id = v, at = r * T + t;
        }
      }
      HKT_CHECK(top_id < Limits::kMaxVocab, x.name, x.index(at), " = ", top_id, ": token ids must be below ",
                Limits::kMaxVocab);
      e.vocab = top_id + 1;
    }
  } else {
    e.features = features_of(s.inputs);
  }
  return e;
}

Dataset encode_arrays(const ArraySource& s, const ArrayEncoding& enc, const std::string& name, bool labelled) {
  check_array_source(enc.task, s, labelled);
  const NumArray& x = s.inputs;
  const int64_t N = s.rows(), T = x.shape[1], F = features_of(x), C = static_cast<int64_t>(enc.classes.size());
  Dataset d;
  d.name = name;
  d.seq_len = enc.seq_len;
  d.classes = C;
  const bool tokens = enc.task == "tokens";
  if (tokens) {
    d.vocab = enc.vocab;
    d.pad_id = std::max<int64_t>(0, enc.pad_id);
    d.tokens.reserve(static_cast<size_t>(N * enc.seq_len));
  } else {
    HKT_CHECK(F == enc.features, x.name, ": ", F, " features a position, the run has ", enc.features);
    d.features = F;
    d.values.reserve(static_cast<size_t>(N * enc.seq_len * F));
  }
  std::vector<int64_t> ids;
  std::vector<float> vals;
  for (int64_t r = 0; r < N; ++r) {
    const int64_t n = row_length(s, r, tokens ? enc.pad_id : -1);
    HKT_CHECK(n <= enc.seq_len, x.name, ": row ", r, " has ", n, " positions, more than seq_len ", enc.seq_len,
              " (arrays are not truncated; give lengths or pad ids, or a larger --seq-len)");
    int64_t label = 0;
    if (labelled) {
      label = s.labels->int_at(r);
      HKT_CHECK(label >= 0 && label < C, s.labels->name, "[", r, "] = ", label, " is not a class (0..", C - 1, ": ",
                classes_str(enc.classes), ")");
    }
    if (tokens) {
      ids.resize(static_cast<size_t>(n));
      for (int64_t t = 0; t < n; ++t) {
        const int64_t v = x.int_at(r * T + t);
        HKT_CHECK(v >= 0 && v < enc.vocab, x.name, x.index(r * T + t), " = ", v, " is outside the vocabulary [0, ",
                  enc.vocab, ") (its size: the training file's largest id + 1, or --vocab-size)");
        ids[static_cast<size_t>(t)] = v;
      }
      d.add_tokens(ids, label);
    } else {
      vals.resize(static_cast<size_t>(n * F));
      for (int64_t k = 0; k < n * F; ++k) {
        const double v = x.float_at(r * T * F + k);
        const float f = static_cast<float>(v);
        HKT_CHECK(std::isfinite(f), x.name, x.index(r * T * F + k), " = ", v,
                  " is not a finite float32 (NaN or infinite at a real position; mark padding with a lengths array)");
        vals[static_cast<size_t>(k)] = f;
      }
      d.add_values(vals, n, label);
    }
  }
  d.validate();
  return d;
}

void fit_scale(ArrayEncoding& enc, const Dataset& train) {
  if (enc.task != "series") return;
  const int64_t F = train.features, T = train.seq_len;
  std::vector<double> sum(static_cast<size_t>(F)), sq(static_cast<size_t>(F));
  int64_t count = 0;
  for (int64_t i = 0; i < train.size(); ++i) {
    count += train.lengths[i];
    for (int64_t k = 0; k < train.lengths[i] * F; ++k) sum[k % F] += train.values[(i * T) * F + k];
  }
  enc.mean.assign(F, 0.0);
  enc.scale.assign(F, 1.0);
  for (int64_t f = 0; f < F; ++f) enc.mean[f] = sum[f] / static_cast<double>(count);
  for (int64_t i = 0; i < train.size(); ++i)
    for (int64_t k = 0; k < train.lengths[i] * F; ++k) {
      const double dv = train.values[(i * T) * F + k] - enc.mean[k % F];
      sq[k % F] += dv * dv;
    }
  for (int64_t f = 0; f < F; ++f) {
    const double sd = std::sqrt(sq[f] / static_cast<double>(count));
    enc.scale[f] = std::isfinite(sd) && sd > 0 ? sd : 1.0;
  }
}

void apply_scale(Dataset& d, const ArrayEncoding& enc) {
  if (enc.task != "series" || enc.mean.empty()) return;
  const int64_t F = d.features, T = d.seq_len;
  HKT_CHECK(static_cast<int64_t>(enc.mean.size()) == F && static_cast<int64_t>(enc.scale.size()) == F, d.name,
            ": the standardisation has ", enc.mean.size(), " features, the data ", F);
  for (int64_t i = 0; i < d.size(); ++i)
    for (int64_t k = 0; k < d.lengths[i] * F; ++k) {
      float& v = d.values[(i * T) * F + k];
      v = static_cast<float>((v - enc.mean[k % F]) / enc.scale[k % F]);
      HKT_CHECK(std::isfinite(v), d.name, ": example ", i, " position ", k / F, " feature ", k % F,
                " is not finite once standardised");
    }
}

std::string ArrayEncoding::to_json() const {
  json j = {{"task", task}, {"seq_len", seq_len}, {"classes", classes}};
  if (task == "tokens") {
    j["vocab_size"] = vocab;
    j["pad_id"] = pad_id;
  } else {
    j["features"] = features;
    j["mean"] = mean;
    j["scale"] = scale;
  }
  try {
    return j.dump(2) + "\n";
  } catch (const json::exception& e) {  // a class name given on the command line
    throw Error(str_cat(task, ": a class name is not valid UTF-8 (", e.what(), ")"));
  }
}

ArrayEncoding ArrayEncoding::from_json(const std::string& text, const std::string& what) {
  ArrayEncoding e;
  try {
    const json j = json::parse(text);
    e.task = j.at("task").get<std::string>();
    e.seq_len = j.at("seq_len").get<int64_t>();
    e.classes = j.at("classes").get<std::vector<std::string>>();
    if (e.task == "tokens") {
      e.vocab = j.at("vocab_size").get<int64_t>();
      e.pad_id = j.at("pad_id").get<int64_t>();
    } else {
      e.features = j.at("features").get<int64_t>();
      e.mean = j.at("mean").get<std::vector<double>>();
      e.scale = j.at("scale").get<std::vector<double>>();
    }
  } catch (const json::exception& ex) {
    throw Error(str_cat(what, ": ", ex.what()));
  }
  HKT_CHECK(e.task == "tokens" || e.task == "series", what, ": unknown task '", e.task, "'");
  HKT_CHECK(e.seq_len >= 1 && e.seq_len <= Limits::kMaxLen, what, ": seq_len ", e.seq_len, " out of range");
  HKT_CHECK(e.classes.size() >= 2, what, ": needs at least 2 classes, has ", e.classes.size());
  if (e.task == "tokens") {
    HKT_CHECK(e.vocab >= 1 && e.vocab <= Limits::kMaxVocab && e.pad_id >= -1 && e.pad_id < e.vocab, what,
              ": vocab_size ", e.vocab, " or pad_id ", e.pad_id, " out of range");
  } else {
    HKT_CHECK(e.features >= 1 && e.features <= Limits::kMaxFeatures, what, ": features ", e.features, " out of range");
    const auto n = static_cast<size_t>(e.features);
    HKT_CHECK((e.mean.empty() && e.scale.empty()) || (e.mean.size() == n && e.scale.size() == n), what,
              ": mean and scale need one value per feature");
    for (size_t f = 0; f < e.scale.size(); ++f)
      HKT_CHECK(std::isfinite(e.mean[f]) && std::isfinite(e.scale[f]) && e.scale[f] > 0, what, ": feature ", f,
                "'s mean or scale is not usable");
  }
  return e;
}

}  // namespace hkt::tasks
