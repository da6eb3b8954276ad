// CIFAR-10 (binary version) into a Dataset: LRA's grayscale pixel tokens or
// RGB features. See hkt/tasks/images.hpp.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "hkt/core/error.hpp"
#include "hkt/tasks/images.hpp"

namespace hkt::tasks {

namespace {

namespace fs = std::filesystem;

constexpr int64_t kPixels = 1024;                 // 32 x 32
constexpr int64_t kRecord = 1 + 3 * kPixels;      // label, R plane, G plane, B plane
constexpr int64_t kClasses = 10;

// tf.image.rgb_to_grayscale on a uint8 image, in float32 as TensorFlow computes it.
inline int64_t lra_gray(uint8_t r, uint8_t g, uint8_t b) {
  constexpr float kInv = 1.0f / 255.0f;
  const float y = (static_cast<float>(r) * kInv) * 0.2989f + (static_cast<float>(g) * kInv) * 0.5870f +
                  (static_cast<float>(b) * kInv) * 0.1140f;
  const float scaled = y * 255.5f;
  return scaled >= 255.0f ? 255 : static_cast<int64_t>(scaled);  // the cast truncates
}

// The folder with the batch files: `dir` itself or dir/cifar-10-batches-bin.
fs::path batches_dir(const std::string& dir) {
  const fs::path d(dir);
  HKT_CHECK(fs::is_directory(d), "load_cifar10: folder '", dir,
            "' does not exist (tools/hkt-data cifar10 downloads and extracts CIFAR-10 into "
            "$HKT_DATA/cifar-10-batches-bin)");
  if (fs::exists(d / "data_batch_1.bin") || fs::exists(d / "test_batch.bin")) return d;
  if (fs::is_directory(d / "cifar-10-batches-bin")) return d / "cifar-10-batches-bin";
  throw Error(str_cat("load_cifar10: folder '", dir,
                      "' holds neither data_batch_1.bin / test_batch.bin nor a cifar-10-batches-bin folder "
                      "(tools/hkt-data cifar10 downloads and extracts CIFAR-10 into $HKT_DATA/cifar-10-batches-bin)"));
}

// Appends the records of one batch file (at most `limit` of them; < 0 = all).
void read_batch(const fs::path& path, ImageEncoding enc, int64_t limit, Dataset& out) {
  const std::string p = path.string();
  HKT_CHECK(fs::is_regular_file(path), "load_cifar10: missing file '", p, "'");
  const auto size = static_cast<int64_t>(fs::file_size(path));
  HKT_CHECK(size > 0, "load_cifar10: '", p, "' is empty");
  HKT_CHECK(size % kRecord == 0, "load_cifar10: '", p, "' is truncated or not a CIFAR-10 batch: its size ", size,
            " is not a multiple of the record size ", kRecord, " (", size / kRecord, " whole records and ",
            size % kRecord, " bytes left over)");
  int64_t n = size / kRecord;
  if (limit >= 0 && limit < n) n = limit;

  std::ifstream f(path, std::ios::binary);
  HKT_CHECK(f.good(), "load_cifar10: cannot open '", p, "': ", std::strerror(errno));
  std::vector<uint8_t> rec(static_cast<size_t>(kRecord));
  std::vector<int64_t> ids(static_cast<size_t>(kPixels));
  std::vector<float> vals(static_cast<size_t>(3 * kPixels));
  for (int64_t i = 0; i < n; ++i) {
    f.read(reinterpret_cast<char*>(rec.data()), kRecord);
    HKT_CHECK(f.gcount() == kRecord, "load_cifar10: '", p, "': record ", i, " is truncated (read ", f.gcount(),
              " of ", kRecord, " bytes)");
    const int64_t label = rec[0];
    HKT_CHECK(label < kClasses, "load_cifar10: '", p, "': record ", i, " (byte offset ", i * kRecord,
              ") has label byte ", label, ", expected 0..9");
    const uint8_t* R = rec.data() + 1;
    const uint8_t* G = R + kPixels;
    const uint8_t* B = G + kPixels;
    if (enc == ImageEncoding::GrayTokens) {
      for (int64_t t = 0; t < kPixels; ++t) ids[t] = lra_gray(R[t], G[t], B[t]);
      out.add_tokens(ids, label);
    } else {
      constexpr float kInv = 1.0f / 255.0f;
      for (int64_t t = 0; t < kPixels; ++t) {
        vals[3 * t + 0] = static_cast<float>(R[t]) * kInv;
        vals[3 * t + 1] = static_cast<float>(G[t]) * kInv;
        vals[3 * t + 2] = static_cast<float>(B[t]) * kInv;
      }
      out.add_values(vals, kPixels, label);
    }
  }
}

Dataset empty_split(const std::string& name, ImageEncoding enc) {
  Dataset d;
  d.name = name;
  d.seq_len = kPixels;
  d.classes = kClasses;
  d.pad_id = 0;
  if (enc == ImageEncoding::GrayTokens) d.vocab = 256;
  else d.features = 3;
  return d;
}

}  // namespace

Splits load_cifar10(const std::string& dir, ImageEncoding enc, int64_t val_size, uint64_t seed, int64_t max_train) {
  HKT_CHECK(val_size >= 0 && max_train >= 0, "load_cifar10: val_size (", val_size, ") and max_train (", max_train,
            ") must be >= 0");
  const fs::path d = batches_dir(dir);
  Splits s;
  s.train = empty_split("cifar10/train", enc);
  s.test = empty_split("cifar10/test", enc);
  // Check that every file is there before spending time on reading.
  for (const char* name :
       {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin",
        "test_batch.bin"})
    HKT_CHECK(fs::is_regular_file(d / name), "load_cifar10: missing file '", (d / name).string(),
              "' (expected data_batch_1.bin .. data_batch_5.bin and test_batch.bin in '", d.string(), "')");
  for (int b = 1; b <= 5; ++b) {
    const int64_t left = max_train > 0 ? max_train - s.train.size() : -1;
    if (left == 0) break;
    read_batch(d / str_cat("data_batch_", b, ".bin"), enc, left, s.train);
  }
  read_batch(d / "test_batch.bin", enc, -1, s.test);
  s.train.validate();
  s.test.validate();
  s.val = empty_split("cifar10/val", enc);
  if (val_size > 0) carve_validation(s, val_size, seed);
  return s;
}

}  // namespace hkt::tasks
