// The task registry: one name -> train/val/test splits, and the model
// dimensions a task implies.
//
//   synthetic      generated here: majority token (see below); for tests and smoke runs
//   listops        generated ListOps (listops.hpp), sizes configurable
//   listops-tsv    LRA's ListOps TSV files from a folder
//   cifar10        CIFAR-10 binary files as LRA grayscale tokens (T = 1024, 256 ids)
//   cifar10-rgb    CIFAR-10 as RGB pixels (T = 1024, 3 features)
//   fashion-mnist  Fashion-MNIST IDX files
//   imdb           aclImdb reviews at the character (byte) level
//   text           a user's labelled TSV / CSV files (text_data.hpp; TaskOptions::text)
//   tokens         a user's integer token arrays, .npy / .npz / safetensors (array_data.hpp;
//                  TaskOptions::arrays)
//   series         a user's real-valued feature arrays [N, T, F], same files (array_data.hpp)
//
// File-based tasks read from TaskOptions::data_dir (default_data_dir() when
// empty); each looks first in a task subfolder (listops-tsv: "listops",
// cifar*: "cifar-10-batches-bin", fashion-mnist: "fashion-mnist", imdb:
// "aclImdb") and otherwise in data_dir itself (fashion-mnist, when data_dir is
// empty, tries /usr/share/datasets/fashion-mnist before that).
//
// synthetic: tokens 1..C (C = 4 classes, pad id 0), lengths uniform in
// [T/2, T] (T = seq_len, default 32); the label is the most frequent token
// (ties: the smallest), minus one. Default sizes 1024 / 256 / 256.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "hkt/models/classifier.hpp"
#include "hkt/tasks/array_data.hpp"
#include "hkt/tasks/dataset.hpp"
#include "hkt/tasks/text_data.hpp"

namespace hkt::tasks {

struct TaskOptions {
  std::string data_dir;    // "" = default_data_dir()
  int64_t seq_len = 0;     // 0 = the task's default (token tasks that allow it)
  int64_t train_size = 0;  // generated tasks: examples (0 = default); file tasks: at most this many (0 = all)
  int64_t val_size = 0;    // 0 = the task's default
  int64_t test_size = 0;   // generated tasks: size; file tasks: a seeded subset of the test split (0 = all)
  int64_t max_depth = 0;   // listops: 0 = default
  int64_t max_args = 0;    // listops: 0 = default
  int64_t min_len = 0;     // listops: length window [min_len, max_len] of the token count (0 = no minimum)
  int64_t max_len = 0;     // listops: 0 = seq_len
  uint64_t seed = 0;       // data generation and validation split
  TextTaskOptions text;    // text: the files and how to read them
  ArrayTaskOptions arrays; // tokens, series: the files and how to read them

  bool operator==(const TaskOptions&) const = default;
};

// ${HKT_DATA}, else $HOME/.cache/hkt/data (where tools/hkt-data puts the data sets).
std::string default_data_dir();
// Every name load_task accepts.
const std::vector<std::string>& task_names();
// Throws hkt::Error "<who>unknown task 'NAME'; did you mean 'X'? (known: a, b, ...)" unless
// `name` is one of task_names().
void check_task_name(const std::string& name, const std::string& who);
// Loads (or generates) and validates the three splits. Throws hkt::Error for
// an unknown task (listing the known ones) or a missing / malformed file.
Splits load_task(const std::string& name, const TaskOptions& opt);
// The synthetic majority-token task.
Splits make_synthetic(int64_t train_size, int64_t val_size, int64_t test_size, int64_t seq_len, uint64_t seed);
// Sets vocab or input_features, classes and max_len (= seq_len) from the data.
void fill_model_config(nn::ClassifierConfig& cfg, const Dataset& data);

}  // namespace hkt::tasks
