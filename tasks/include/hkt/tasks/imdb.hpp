// IMDB movie-review sentiment (Maas et al., 2011) at the byte level, as in
// LRA's "Text" task.
#pragma once
#include <cstdint>
#include <string>

#include "hkt/tasks/dataset.hpp"

namespace hkt::tasks {

// Reads aclImdb/{train,test}/{pos,neg}/<id>_<rating>.txt. `dir` is the aclImdb
// folder or its parent. Each review's raw bytes become tokens byte + 1 (vocab
// 257; 0 is padding, pad_id 0), truncated to `seq_len` (default 1024); label
// 1 = pos, 0 = neg. Within a split the pos/ files come first, then neg/, each
// folder sorted by file name (byte-wise), so the order is deterministic.
// `val_size` training reviews chosen with `seed` (carve_validation) become
// the validation set (0 = none); IMDB has no validation split of its own.
// max_train > 0 (for quick CPU runs): instead of all 25,000 training reviews,
// a seeded, balanced subset of max_train of them (max_train / 2 pos and the
// rest neg, each class drawn uniformly without replacement with `seed`, kept
// in file order; only those files are read). The test split is always whole.
// Bad data throws hkt::Error naming the file or folder: a missing folder, a
// folder with no reviews, a file name not of the form <id>_<rating>.txt
// (digits; rating 1..10), an empty review file.
// Names: "imdb/train", "imdb/val", "imdb/test".
Splits load_imdb(const std::string& dir, int64_t seq_len = 1024, int64_t val_size = 2500, uint64_t seed = 0,
                 int64_t max_train = 0);

}  // namespace hkt::tasks
