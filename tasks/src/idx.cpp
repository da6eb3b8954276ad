// IDX files (MNIST format), plain or gzipped, and Fashion-MNIST. See
// hkt/tasks/images.hpp.
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "hkt/core/error.hpp"
#include "hkt/tasks/images.hpp"

namespace hkt::tasks {

namespace {

namespace fs = std::filesystem;

constexpr uint32_t kMagicImages = 0x00000803;  // unsigned byte, 3 dimensions
constexpr uint32_t kMagicLabels = 0x00000801;  // unsigned byte, 1 dimension
// No real IDX file comes near this; a larger header is corrupt.
constexpr int64_t kMaxPayload = int64_t{1} << 34;

std::string hex32(uint32_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x";
  for (int i = 28; i >= 0; i -= 4) s += digits[(v >> i) & 15];
  return s;
}

// A file read through zlib: gzread passes a plain file through unchanged.
class GzReader {
 public:
  GzReader(const std::string& what, const std::string& path) : what_(what), path_(path) {
    HKT_CHECK(fs::exists(path), what, ": no such file '", path, "'");
    HKT_CHECK(fs::is_regular_file(path), what, ": '", path, "' is not a regular file");
    f_ = gzopen(path.c_str(), "rb");
    HKT_CHECK(f_ != nullptr, what, ": cannot open '", path, "': ", std::strerror(errno));
  }
  ~GzReader() {
    if (f_) gzclose(f_);
  }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Reads up to n bytes; returns how many were read (< n only at the end of
  // the data). A corrupt or truncated gzip stream is an error.
  int64_t read(uint8_t* dst, int64_t n) {
    int64_t got = 0;
    while (got < n) {
      const auto chunk = static_cast<unsigned>(std::min<int64_t>(n - got, int64_t{1} << 24));
      const int r = gzread(f_, dst + got, chunk);
      if (r < 0) fail();
      if (r == 0) break;
      got += r;
    }
    int err = Z_OK;
    gzerror(f_, &err);
    if (err != Z_OK && err != Z_STREAM_END) fail();
    return got;
  }

  uint32_t read_be32(const char* field) {
    uint8_t b[4];
    const int64_t got = read(b, 4);
    HKT_CHECK(got == 4, what_, ": '", path_, "' is truncated: it ends inside the header (", field, ")");
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
  }

  // Reads exactly n payload bytes, then checks that nothing follows (which also
  // makes zlib verify the gzip trailer's CRC and length).
  std::vector<uint8_t> read_payload(int64_t n, const std::string& header) {
    std::vector<uint8_t> out;
    // Grow as the data arrives, so that a corrupt header cannot ask for a huge allocation.
    constexpr int64_t kStep = int64_t{1} << 24;
    while (static_cast<int64_t>(out.size()) < n) {
      const int64_t have = static_cast<int64_t>(out.size());
      const int64_t want = std::min(kStep, n - have);
      out.resize(static_cast<size_t>(have + want));
      const int64_t got = read(out.data() + have, want);
      HKT_CHECK(got == want, what_, ": '", path_, "' is truncated: the header (", header, ") says ", n,
                " bytes of data follow, but only ", have + got, " do");
    }
    uint8_t extra[1];
    HKT_CHECK(read(extra, 1) == 0, what_, ": '", path_, "' has data after the ", n, " bytes its header (", header,
              ") announces: not an IDX file of that size");
    return out;
  }

 private:
  [[noreturn]] void fail() {
    int err = Z_OK;
    const char* msg = gzerror(f_, &err);
    throw Error(str_cat(what_, ": '", path_, "' is a truncated or corrupt gzip file (zlib: ",
                        msg && *msg ? msg : "read error", ")"));
  }

  std::string what_, path_;
  gzFile f_ = nullptr;
};

void check_magic(const std::string& what, const std::string& path, uint32_t magic, uint32_t expected,
                 const char* kind) {
  if (magic == expected) return;
  std::string hint;
  if (magic == kMagicImages) hint = " (that of an IDX image file)";
  else if (magic == kMagicLabels) hint = " (that of an IDX label file)";
  else if ((magic >> 16) == 0x1f8b) hint = " (gzip magic: compressed twice?)";
  throw Error(str_cat(what, ": '", path, "' has the wrong magic number ", hex32(magic), hint, "; expected ",
                      hex32(expected), " for an IDX ", kind, " file"));
}

// dir/name, or dir/name.gz when only that exists.
std::string idx_file(const fs::path& dir, const std::string& name) {
  if (fs::exists(dir / name)) return (dir / name).string();
  if (fs::exists(dir / (name + ".gz"))) return (dir / (name + ".gz")).string();
  throw Error(str_cat("load_fashion_mnist: missing file: neither '", (dir / name).string(), "' nor '",
                      (dir / (name + ".gz")).string(), "' exists"));
}

Dataset idx_split(const std::string& name, const std::string& images_path, const std::string& labels_path,
                  int64_t limit) {
  const IdxImages im = read_idx_images(images_path);
  const std::vector<uint8_t> lab = read_idx_labels(labels_path);
  HKT_CHECK(im.count == static_cast<int64_t>(lab.size()), "load_fashion_mnist: image/label count mismatch: '",
            images_path, "' has ", im.count, " images but '", labels_path, "' has ", lab.size(), " labels");
  HKT_CHECK(im.count > 0, "load_fashion_mnist: '", images_path, "' holds no images");
  HKT_CHECK(im.rows > 0 && im.cols > 0, "load_fashion_mnist: '", images_path, "' has images of ", im.rows, " x ",
            im.cols, " pixels");
  Dataset d;
  d.name = name;
  d.seq_len = im.rows * im.cols;
  d.vocab = 256;
  d.classes = 10;
  d.pad_id = 0;
  const int64_t T = d.seq_len;
  const int64_t n = limit > 0 ? std::min(limit, im.count) : im.count;
  d.tokens.resize(static_cast<size_t>(n * T));
  d.lengths.assign(static_cast<size_t>(n), T);
  d.labels.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < im.count; ++i)
    HKT_CHECK(lab[i] < 10, "load_fashion_mnist: '", labels_path, "': label ", i, " is ", int{lab[i]},
              ", expected 0..9");
  std::copy(lab.begin(), lab.begin() + n, d.labels.begin());
  std::copy(im.pixels.begin(), im.pixels.begin() + n * T, d.tokens.begin());
  return d;
}

}  // namespace

IdxImages read_idx_images(const std::string& path) {
  const std::string what = "read_idx_images";
  GzReader f(what, path);
  check_magic(what, path, f.read_be32("magic number"), kMagicImages, "image");
  IdxImages im;
  im.count = f.read_be32("image count");
  im.rows = f.read_be32("rows");
  im.cols = f.read_be32("columns");
  const std::string header = str_cat(im.count, " images of ", im.rows, " x ", im.cols);
  // rows, cols < 2^16, so rows * cols < 2^32 and the product below cannot overflow.
  HKT_CHECK(im.rows < (int64_t{1} << 16) && im.cols < (int64_t{1} << 16) &&
                (im.rows * im.cols == 0 || im.count <= kMaxPayload / (im.rows * im.cols)),
            what, ": '", path, "' has an implausible header (", header, "): corrupt file?");
  im.pixels = f.read_payload(im.count * im.rows * im.cols, header);
  return im;
}

std::vector<uint8_t> read_idx_labels(const std::string& path) {
  const std::string what = "read_idx_labels";
  GzReader f(what, path);
  check_magic(what, path, f.read_be32("magic number"), kMagicLabels, "label");
  const int64_t count = f.read_be32("label count");
  return f.read_payload(count, str_cat(count, " labels"));
}

Splits load_fashion_mnist(const std::string& dir, int64_t val_size, uint64_t seed, int64_t max_train) {
  HKT_CHECK(val_size >= 0 && max_train >= 0, "load_fashion_mnist: val_size (", val_size, ") and max_train (",
            max_train, ") must be >= 0");
  const fs::path d(dir);
  HKT_CHECK(fs::is_directory(d), "load_fashion_mnist: folder '", dir,
            "' does not exist (tools/hkt-data fashion-mnist downloads the IDX files into $HKT_DATA/fashion-mnist; "
            "Debian's dataset-fashion-mnist package installs them in /usr/share/datasets/fashion-mnist)");
  Splits s;
  s.train = idx_split("fashion_mnist/train", idx_file(d, "train-images-idx3-ubyte"),
                      idx_file(d, "train-labels-idx1-ubyte"), max_train);
  s.test = idx_split("fashion_mnist/test", idx_file(d, "t10k-images-idx3-ubyte"),
                     idx_file(d, "t10k-labels-idx1-ubyte"), 0);
  HKT_CHECK(s.train.seq_len == s.test.seq_len, "load_fashion_mnist: the training images in '", dir, "' have ",
            s.train.seq_len, " pixels but the test images ", s.test.seq_len);
  s.train.validate();
  s.test.validate();
  s.val = s.train.subset({}, "fashion_mnist/val");
  if (val_size > 0) carve_validation(s, val_size, seed);
  return s;
}

}  // namespace hkt::tasks
