// IMDB reviews as byte tokens (LRA's "Text" task). See hkt/tasks/imdb.hpp.
#include "hkt/tasks/imdb.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "hkt/core/error.hpp"
#include "hkt/core/random.hpp"
#include "hkt/tasks/progress.hpp"

namespace hkt::tasks {

namespace {

namespace fs = std::filesystem;

constexpr int64_t kVocab = 257;  // byte + 1; 0 = padding

// The aclImdb folder: `dir` itself (holding train/ and test/) or dir/aclImdb.
fs::path imdb_root(const std::string& dir) {
  const fs::path d(dir);
  HKT_CHECK(fs::is_directory(d), "load_imdb: folder '", dir,
            "' does not exist (tools/hkt-data imdb downloads and extracts IMDB into $HKT_DATA/aclImdb)");
  if (fs::is_directory(d / "train") || fs::is_directory(d / "test")) return d;
  if (fs::is_directory(d / "aclImdb")) return d / "aclImdb";
  throw Error(str_cat("load_imdb: folder '", dir,
                      "' holds neither train/ and test/ nor an aclImdb folder "
                      "(tools/hkt-data imdb downloads and extracts IMDB into $HKT_DATA/aclImdb)"));
}

// True when `name` is <id>_<rating>.txt with decimal id and a rating 1..10.
bool review_name_ok(const std::string& name) {
  const std::string ext = ".txt";
  if (name.size() <= ext.size() || name.compare(name.size() - ext.size(), ext.size(), ext) != 0) return false;
  const std::string stem = name.substr(0, name.size() - ext.size());
  const size_t us = stem.find('_');
  if (us == std::string::npos || us == 0 || us + 1 == stem.size()) return false;
  const std::string id = stem.substr(0, us), rating = stem.substr(us + 1);
  const auto digits = [](const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!digits(id) || !digits(rating) || rating.size() > 2) return false;
  const int r = std::stoi(rating);
  return r >= 1 && r <= 10;
}

// The review files of one folder, sorted by file name.
std::vector<fs::path> list_reviews(const fs::path& folder) {
  HKT_CHECK(fs::is_directory(folder), "load_imdb: missing folder '", folder.string(), "'");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(folder)) {
    const std::string name = e.path().filename().string();
    HKT_CHECK(e.is_regular_file(), "load_imdb: '", e.path().string(),
              "' is not a regular file (a review folder holds only <id>_<rating>.txt files)");
    HKT_CHECK(review_name_ok(name), "load_imdb: file name '", e.path().string(),
              "' does not match <id>_<rating>.txt (decimal id, rating 1..10)");
    files.push_back(e.path());
  }
  HKT_CHECK(!files.empty(), "load_imdb: empty split: no reviews (<id>_<rating>.txt files) in folder '",
            folder.string(), "'");
  std::sort(files.begin(), files.end(),
            [](const fs::path& a, const fs::path& b) { return a.filename().string() < b.filename().string(); });
  return files;
}

// Indices of a seeded uniform sample of k of n items, in increasing order.
std::vector<int64_t> sample(int64_t n, int64_t k, uint64_t seed, uint64_t stream) {
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  for (int64_t i = 0; i < k; ++i) {  // partial Fisher-Yates: perm[0..k) is the sample
    const auto r = philox4x32(static_cast<uint64_t>(i), stream, seed);
    const uint64_t u = (static_cast<uint64_t>(r[0]) << 32) | r[1];
    std::swap(perm[i], perm[i + static_cast<int64_t>(u % static_cast<uint64_t>(n - i))]);
  }
  perm.resize(static_cast<size_t>(k));
  std::sort(perm.begin(), perm.end());
  return perm;
}

void add_review(const fs::path& path, int64_t label, Dataset& d, std::vector<int64_t>& ids, std::string& buf) {
  const std::string p = path.string();
  std::error_code ec;
  const auto size = static_cast<int64_t>(fs::file_size(path, ec));
  HKT_CHECK(!ec, "load_imdb: cannot read '", p, "': ", ec.message());
  HKT_CHECK(size > 0, "load_imdb: empty review file '", p, "'");
  const int64_t n = std::min(size, d.seq_len);
  std::ifstream f(path, std::ios::binary);
  HKT_CHECK(f.good(), "load_imdb: cannot open '", p, "': ", std::strerror(errno));
  buf.resize(static_cast<size_t>(n));
  f.read(buf.data(), n);
  HKT_CHECK(f.gcount() == n, "load_imdb: '", p, "': read ", f.gcount(), " of ", n, " bytes");
  ids.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[i] = static_cast<int64_t>(static_cast<unsigned char>(buf[i])) + 1;
  d.add_tokens(ids, label);
}

Dataset read_split(const fs::path& root, const std::string& split, int64_t seq_len, int64_t max_count,
                   uint64_t seed) {
  Dataset d;
  d.name = "imdb/" + split;
  d.seq_len = seq_len;
  d.vocab = kVocab;
  d.classes = 2;
  d.pad_id = 0;
  HKT_CHECK(fs::is_directory(root / split), "load_imdb: missing folder '", (root / split).string(), "'");
  const std::vector<fs::path> pos = list_reviews(root / split / "pos");
  const std::vector<fs::path> neg = list_reviews(root / split / "neg");
  const auto n_pos = static_cast<int64_t>(pos.size()), n_neg = static_cast<int64_t>(neg.size());
  std::vector<int64_t> take_pos, take_neg;
  if (max_count > 0 && max_count < n_pos + n_neg) {
    // Balanced: half of each class; when a class has too few, the other makes up the difference.
    int64_t k_pos = std::min(max_count / 2, n_pos);
    const int64_t k_neg = std::min(max_count - k_pos, n_neg);
    k_pos = max_count - k_neg;
    take_pos = sample(n_pos, k_pos, seed, 0x1bdb0001ull);
    take_neg = sample(n_neg, k_neg, seed, 0x1bdb0000ull);
  } else {
    take_pos.resize(static_cast<size_t>(n_pos));
    take_neg.resize(static_cast<size_t>(n_neg));
    std::iota(take_pos.begin(), take_pos.end(), 0);
    std::iota(take_neg.begin(), take_neg.end(), 0);
  }
  const size_t total = take_pos.size() + take_neg.size();
  d.tokens.reserve(total * static_cast<size_t>(seq_len));
  d.lengths.reserve(total);
  d.labels.reserve(total);
  std::vector<int64_t> ids;
  std::string buf;
  Progress progress("imdb: reading " + split, static_cast<int64_t>(total));
  for (int64_t i : take_pos) {
    add_review(pos[i], 1, d, ids, buf);
    progress.set(d.size());
  }
  for (int64_t i : take_neg) {
    add_review(neg[i], 0, d, ids, buf);
    progress.set(d.size());
  }
  d.validate();
  return d;
}

}  // namespace

Splits load_imdb(const std::string& dir, int64_t seq_len, int64_t val_size, uint64_t seed, int64_t max_train) {
  HKT_CHECK(seq_len > 0, "load_imdb: seq_len must be > 0, got ", seq_len);
  HKT_CHECK(val_size >= 0 && max_train >= 0, "load_imdb: val_size (", val_size, ") and max_train (", max_train,
            ") must be >= 0");
  const fs::path root = imdb_root(dir);
  Splits s;
  s.train = read_split(root, "train", seq_len, max_train, seed);
  s.test = read_split(root, "test", seq_len, 0, seed);
  s.val = s.train.subset({}, "imdb/val");
  if (val_size > 0) carve_validation(s, val_size, seed);
  return s;
}

}  // namespace hkt::tasks
