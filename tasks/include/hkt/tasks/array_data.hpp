// A user's own arrays as training data (docs/tasks.md, "Your own data"): the tokens task (integer
// token ids [N, T]) and the series task (real-valued features [N, T, F], or [N, T] for F = 1), with
// integer labels [N] in 0..C-1, from .npz / .safetensors files holding the arrays "inputs", "labels"
// and optionally "lengths", or from a .npy file of inputs with its labels in a second .npy
// (hkt/tasks/arrays.hpp reads the files).
//
// Every dtype, shape and value is checked, and an error names the file, the array and the element:
// a float token id, an id outside the vocabulary, a NaN or infinite feature at a real position, a
// label outside the classes, labels or lengths whose count differs from the inputs', a length
// outside [1, T]. Positions past an example's length are padding and are not read.
//
// What reading new inputs the same way needs (the task, seq_len, the vocabulary size and pad id,
// the class names, the features' standardisation) is an ArrayEncoding, written to the run folder as
// encoding.json and read back by hkt-predict.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hkt/tasks/arrays.hpp"
#include "hkt/tasks/dataset.hpp"

namespace hkt::tasks {

// The tokens and series tasks (--task tokens, --task series): where the files are and how to read
// them. Not set for other tasks.
struct ArrayTaskOptions {
  std::string train, val, test;  // .npz / .safetensors (inputs, labels, lengths), or .npy (inputs);
                                 // val and test empty: carved from train
  std::string train_labels, val_labels, test_labels;  // the labels .npy of a .npy inputs file
  int64_t vocab_size = 0;  // tokens: 0 = the training file's largest id (or the pad id) + 1
  int64_t pad_id = -1;     // tokens: >= 0: trailing ids equal to it are padding; -1: none
  std::vector<std::string> classes;  // names of classes 0..C-1; empty: "0".."C-1", C = largest label + 1
  bool operator==(const ArrayTaskOptions&) const = default;
  bool set() const { return !train.empty(); }
};

// How a run reads arrays; classes name labels 0..C-1.
struct ArrayEncoding {
  std::string task;  // "tokens" or "series"
  int64_t seq_len = 0;
  std::vector<std::string> classes;
  int64_t vocab = 0, pad_id = -1;   // tokens
  int64_t features = 0;             // series
  std::vector<double> mean, scale;  // series: each feature becomes (x - mean) / scale; empty: as given
  std::string to_json() const;
  static ArrayEncoding from_json(const std::string& text, const std::string& what);
};

// One file's arrays: the inputs, the labels (when read labelled) and the lengths (when given).
struct ArraySource {
  std::string path;
  NumArray inputs;
  std::optional<NumArray> labels, lengths;
  int64_t rows() const { return inputs.shape.empty() ? 0 : inputs.shape[0]; }
};
// Reads a .npz / .safetensors file (arrays "inputs", "labels", "lengths"), or a .npy of inputs whose
// labels are in `labels_path` (a .npy; only with a .npy of inputs). Checks for `task` the dtypes and
// shapes, and that labels and lengths have one entry per input row. Unlabelled (hkt-predict): labels
// are not read.
ArraySource read_array_source(const std::string& task, const std::string& path, const std::string& labels_path,
                              bool labelled);
// The same checks for arrays already read (the fuzz targets' entry).
void check_array_source(const std::string& task, const ArraySource& s, bool labelled);

// The encoding of a training source: seq_len (seq_len > 0, else the inputs' T), the vocabulary
// (tokens), the classes, the features (series; the standardisation is fitted later, fit_scale).
ArrayEncoding fit_array_encoding(const std::string& task, const ArraySource& train, const ArrayTaskOptions& opt,
                                 int64_t seq_len);
// A Dataset of the source's rows at enc.seq_len (labels 0 when unlabelled); not standardised.
Dataset encode_arrays(const ArraySource& s, const ArrayEncoding& enc, const std::string& name, bool labelled);
// Series: the mean and scale (standard deviation, 1 where it is 0) of each feature over the real
// positions of `train`, into enc; apply_scale standardises a data set with them.
void fit_scale(ArrayEncoding& enc, const Dataset& train);
void apply_scale(Dataset& d, const ArrayEncoding& enc);

// The three splits of a tokens / series task, the encoding fitted on the training file
// (Splits::encoding holds its JSON). A missing val / test file is carved from the training rows
// (val_size / test_size, default a tenth each, at least one), seeded, as for the text task;
// train_size > 0 keeps a seeded subset of the training rows.
Splits load_arrays(const std::string& task, const ArrayTaskOptions& opt, int64_t seq_len, int64_t train_size,
                   int64_t val_size, int64_t test_size, uint64_t seed);

}  // namespace hkt::tasks
