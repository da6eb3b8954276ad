// Data loaders: CIFAR-10 binary batches, IDX (plain and gzipped), Fashion-MNIST
// and the aclImdb tree, on small files generated here in each format (never the
// real data sets): values, labels, lengths, validation carving and every kind
// of bad input, by message.
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "helpers/check.hpp"
#include "helpers/temp_dir.hpp"
#include "hkt/tasks/images.hpp"
#include "hkt/tasks/imdb.hpp"

using namespace hkt;
using namespace hkt::tasks;
using namespace hkt::test;
namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<uint8_t>;

void write_file(const fs::path& p, const Bytes& b) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  REQUIRE(f.good());
}
void write_text(const fs::path& p, const std::string& s) { write_file(p, Bytes(s.begin(), s.end())); }

Bytes read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  REQUIRE(f.good());
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

void write_gz(const fs::path& p, const Bytes& b) {
  fs::create_directories(p.parent_path());
  gzFile f = gzopen(p.string().c_str(), "wb9");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, b.data(), static_cast<unsigned>(b.size())) == static_cast<int>(b.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

void put_be32(Bytes& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
}

// ---- CIFAR ----------------------------------------------------------------

constexpr int kPix = 1024;

// Record g (global index over all files written): label, then R, G, B planes.
// The first pixels are colours whose LRA grayscale value is known exactly; the
// last red byte is g, so that each record can be recognised after shuffling.
struct CifarRecord {
  uint8_t label;
  Bytes r, g, b;
};

CifarRecord make_record(int g, uint8_t label) {
  CifarRecord c{label, Bytes(kPix), Bytes(kPix), Bytes(kPix)};
  for (int t = 0; t < kPix; ++t) {
    c.r[t] = static_cast<uint8_t>((t * 7 + g * 13) & 255);
    c.g[t] = static_cast<uint8_t>((t * 3 + g * 5 + 1) & 255);
    c.b[t] = static_cast<uint8_t>((255 - t + g) & 255);
  }
  const uint8_t known[6][3] = {{11, 11, 0}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {255, 255, 255}, {0, 0, 0}};
  for (int t = 0; t < 6; ++t) {
    c.r[t] = known[t][0];
    c.g[t] = known[t][1];
    c.b[t] = known[t][2];
  }
  c.r[kPix - 1] = static_cast<uint8_t>(g);
  return c;
}

Bytes encode(const std::vector<CifarRecord>& recs) {
  Bytes out;
  for (const auto& c : recs) {
    out.push_back(c.label);
    out.insert(out.end(), c.r.begin(), c.r.end());
    out.insert(out.end(), c.g.begin(), c.g.end());
    out.insert(out.end(), c.b.begin(), c.b.end());
  }
  return out;
}

// 5 train batches of 2 records (g = 0..9, labels g % 10) and a test batch of 3 (g = 100..102).
struct CifarFixture {
  TempDir tmp{"data_cifar"};
  fs::path dir = tmp / "cifar-10-batches-bin";
  std::vector<CifarRecord> train, test;
  CifarFixture() {
    for (int b = 1; b <= 5; ++b) {
      std::vector<CifarRecord> recs;
      for (int k = 0; k < 2; ++k) {
        const int g = (b - 1) * 2 + k;
        recs.push_back(make_record(g, static_cast<uint8_t>((g * 3) % 10)));
      }
      train.insert(train.end(), recs.begin(), recs.end());
      write_file(dir / ("data_batch_" + std::to_string(b) + ".bin"), encode(recs));
    }
    for (int k = 0; k < 3; ++k) test.push_back(make_record(100 + k, static_cast<uint8_t>(9 - k)));
    write_file(dir / "test_batch.bin", encode(test));
    write_text(dir / "batches.meta.txt", "airplane\n");
  }
};

// The labels of the first n training records.
std::vector<int64_t> a_labels(const CifarFixture& fx, int n) {
  std::vector<int64_t> l;
  for (int i = 0; i < n; ++i) l.push_back(fx.train[i].label);
  return l;
}

// The marker (last red byte) of example i of an RGB data set.
int64_t rgb_marker(const Dataset& d, int64_t i) {
  return std::lround(d.values[static_cast<size_t>((i * kPix + kPix - 1) * 3)] * 255.0f);
}

}  // namespace

TEST_CASE("cifar10: LRA grayscale tokens") {
  CifarFixture fx;
  // Both the batch folder and its parent are accepted.
  for (const fs::path& dir : {fx.dir, fx.tmp.path}) {
    const Splits s = load_cifar10(dir.string(), ImageEncoding::GrayTokens, 0);
    for (const Dataset* d : {&s.train, &s.test}) {
      CHECK(d->seq_len == 1024);
      CHECK(d->vocab == 256);
      CHECK(d->features == 0);
      CHECK(d->classes == 10);
      CHECK(std::all_of(d->lengths.begin(), d->lengths.end(), [](int64_t l) { return l == 1024; }));
    }
    CHECK(s.train.name == "cifar10/train");
    CHECK(s.test.name == "cifar10/test");
    CHECK(s.val.size() == 0);
    REQUIRE(s.train.size() == 10);
    REQUIRE(s.test.size() == 3);
    for (int64_t i = 0; i < 10; ++i) CHECK(s.train.labels[i] == fx.train[i].label);
    for (int64_t i = 0; i < 3; ++i) CHECK(s.test.labels[i] == 9 - i);
  }
  const Splits s = load_cifar10(fx.dir.string(), ImageEncoding::GrayTokens, 0);
  // Exact values of tf.image.rgb_to_grayscale on uint8: floor(y * 255.5), not round(255 y).
  const int64_t* t0 = &s.train.tokens[0];
  CHECK(t0[0] == 9);    // (11, 11, 0): round() would give 10
  CHECK(t0[1] == 76);   // pure red
  CHECK(t0[2] == 149);  // pure green: round(0.587 * 255) would give 150
  CHECK(t0[3] == 29);   // pure blue
  CHECK(t0[4] == 255);
  CHECK(t0[5] == 0);
  // Every pixel of every record (the R, G, B planes at the same position t
  // combine), against the formula in double precision away from ties.
  int checked = 0;
  for (int64_t i = 0; i < 10; ++i) {
    const CifarRecord& c = fx.train[i];
    for (int t = 0; t < kPix - 1; ++t) {
      const double y = (0.2989 * c.r[t] + 0.5870 * c.g[t] + 0.1140 * c.b[t]) / 255.0 * 255.5;
      if (std::abs(y - std::round(y)) < 1e-3) continue;
      CHECK(s.train.tokens[i * kPix + t] == static_cast<int64_t>(std::floor(y)));
      ++checked;
    }
  }
  CHECK(checked > 10000);
}

TEST_CASE("cifar10: RGB features") {
  CifarFixture fx;
  const Splits s = load_cifar10(fx.tmp.path.string(), ImageEncoding::RGB, 0);
  for (const Dataset* d : {&s.train, &s.test}) {
    CHECK(d->seq_len == 1024);
    CHECK(d->features == 3);
    CHECK(d->vocab == 0);
    CHECK(d->values.size() == static_cast<size_t>(d->size() * 1024 * 3));
  }
  REQUIRE(s.test.size() == 3);
  for (int64_t i = 0; i < 3; ++i) {
    const CifarRecord& c = fx.test[i];
    CHECK(s.test.labels[i] == c.label);
    for (int t = 0; t < kPix; ++t) {
      const float* v = &s.test.values[static_cast<size_t>((i * kPix + t) * 3)];
      CHECK(v[0] == doctest::Approx(c.r[t] / 255.0).epsilon(1e-6));
      CHECK(v[1] == doctest::Approx(c.g[t] / 255.0).epsilon(1e-6));
      CHECK(v[2] == doctest::Approx(c.b[t] / 255.0).epsilon(1e-6));
    }
  }
  // Row-major: pixel (row 3, col 5) is position 3 * 32 + 5 of each plane.
  CHECK(s.train.values[(3 * 32 + 5) * 3 + 1] == doctest::Approx(fx.train[0].g[3 * 32 + 5] / 255.0));
  const auto [lo, hi] = std::minmax_element(s.train.values.begin(), s.train.values.end());
  CHECK(*lo == 0.0f);
  CHECK(*hi == 1.0f);
  CHECK_NOTHROW(s.train.batch({0, 9}));
}

TEST_CASE("cifar10: max_train and validation carving") {
  CifarFixture fx;
  const Splits q = load_cifar10(fx.dir.string(), ImageEncoding::RGB, 0, 0, 3);
  REQUIRE(q.train.size() == 3);  // batch 1's two records, then batch 2's first
  for (int64_t i = 0; i < 3; ++i) CHECK(rgb_marker(q.train, i) == i);
  const Splits q5 = load_cifar10(fx.dir.string(), ImageEncoding::GrayTokens, 0, 0, 5);
  CHECK(q5.train.size() == 5);
  CHECK(q5.train.labels == std::vector<int64_t>(a_labels(fx, 5)));
  CHECK(q.test.size() == 3);

  const Splits a = load_cifar10(fx.dir.string(), ImageEncoding::RGB, 4, 7);
  CHECK(a.train.size() == 6);
  CHECK(a.val.size() == 4);
  CHECK(a.val.name == "cifar10/val");
  std::set<int64_t> tr, va;
  for (int64_t i = 0; i < a.train.size(); ++i) tr.insert(rgb_marker(a.train, i));
  for (int64_t i = 0; i < a.val.size(); ++i) va.insert(rgb_marker(a.val, i));
  CHECK(tr.size() == 6);
  CHECK(va.size() == 4);
  std::set<int64_t> all = tr;
  all.insert(va.begin(), va.end());
  CHECK(all.size() == 10);  // disjoint, and together the whole training set
  for (int64_t i = 0; i < a.val.size(); ++i) CHECK(a.val.labels[i] == fx.train[rgb_marker(a.val, i)].label);
  // Deterministic for a seed, and the seed matters.
  const Splits b = load_cifar10(fx.dir.string(), ImageEncoding::RGB, 4, 7);
  CHECK(b.val.values == a.val.values);
  CHECK(b.train.labels == a.train.labels);
  bool differs = false;
  for (uint64_t seed = 8; seed < 14 && !differs; ++seed)
    differs = load_cifar10(fx.dir.string(), ImageEncoding::RGB, 4, seed).val.values != a.val.values;
  CHECK(differs);
  check_error([&] { load_cifar10(fx.dir.string(), ImageEncoding::RGB, 10); }, "cannot carve 10 validation");
}

TEST_CASE("cifar10: bad data") {
  check_error([] { load_cifar10("/nonexistent/hkt_cifar", ImageEncoding::RGB); }, "'/nonexistent/hkt_cifar' does not exist");
  {
    TempDir empty("data_empty");
    check_error([&] { load_cifar10(empty.path.string(), ImageEncoding::RGB, 0); }, "holds neither data_batch_1.bin");
  }
  {
    CifarFixture fx;
    fs::remove(fx.dir / "data_batch_3.bin");
    check_error([&] { load_cifar10(fx.dir.string(), ImageEncoding::RGB, 0); }, "missing file");
    check_error([&] { load_cifar10(fx.dir.string(), ImageEncoding::RGB, 0); }, "data_batch_3.bin");
  }
  {
    CifarFixture fx;
    Bytes b = read_file(fx.dir / "data_batch_2.bin");
    b.pop_back();  // truncated last record
    write_file(fx.dir / "data_batch_2.bin", b);
    check_error([&] { load_cifar10(fx.dir.string(), ImageEncoding::GrayTokens, 0); },
                "data_batch_2.bin' is truncated or not a CIFAR-10 batch: its size 6145 is not a multiple of the "
                "record size 3073");
  }
  {
    CifarFixture fx;
    Bytes b = read_file(fx.dir / "test_batch.bin");
    b[3073 * 2] = 10;  // label of record 2
    write_file(fx.dir / "test_batch.bin", b);
    check_error([&] { load_cifar10(fx.dir.string(), ImageEncoding::GrayTokens, 0); },
                "test_batch.bin': record 2 (byte offset 6146) has label byte 10, expected 0..9");
  }
  {
    CifarFixture fx;
    write_file(fx.dir / "data_batch_5.bin", {});
    check_error([&] { load_cifar10(fx.dir.string(), ImageEncoding::RGB, 0); }, "data_batch_5.bin' is empty");
  }
  {
    CifarFixture fx;
    check_error([&] { load_cifar10(fx.dir.string(), ImageEncoding::RGB, -1); }, "must be >= 0");
  }
}

// ---- IDX and Fashion-MNIST --------------------------------------------------

namespace {

Bytes idx_images(uint32_t count, uint32_t rows, uint32_t cols, const Bytes& pixels, uint32_t magic = 0x803) {
  Bytes b;
  put_be32(b, magic);
  put_be32(b, count);
  put_be32(b, rows);
  put_be32(b, cols);
  b.insert(b.end(), pixels.begin(), pixels.end());
  return b;
}
Bytes idx_labels(const Bytes& labels, uint32_t magic = 0x801) {
  Bytes b;
  put_be32(b, magic);
  put_be32(b, static_cast<uint32_t>(labels.size()));
  b.insert(b.end(), labels.begin(), labels.end());
  return b;
}
Bytes pixels_for(int count, int per_image, int salt) {
  Bytes p(static_cast<size_t>(count * per_image));
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>((i * 31 + static_cast<size_t>(salt)) & 255);
  return p;
}

// Fashion-MNIST-shaped files: 12 training and 4 test images of 28 x 28.
struct FashionFixture {
  TempDir tmp{"data_fashion"};
  fs::path dir = tmp / "fashion-mnist";
  Bytes train_px = pixels_for(12, 784, 1), test_px = pixels_for(4, 784, 2);
  Bytes train_lab = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 0}, test_lab = {3, 1, 4, 1};
  explicit FashionFixture(bool gz = true) {
    const auto put = [&](const std::string& name, const Bytes& b) {
      if (gz) write_gz(dir / (name + ".gz"), b);
      else write_file(dir / name, b);
    };
    put("train-images-idx3-ubyte", idx_images(12, 28, 28, train_px));
    put("train-labels-idx1-ubyte", idx_labels(train_lab));
    put("t10k-images-idx3-ubyte", idx_images(4, 28, 28, test_px));
    put("t10k-labels-idx1-ubyte", idx_labels(test_lab));
  }
};

}  // namespace

TEST_CASE("idx: plain and gzipped files") {
  TempDir tmp("data_idx");
  const Bytes px = pixels_for(5, 3 * 4, 3);
  const Bytes lab = {7, 0, 9, 2, 2};
  write_file(tmp / "im", idx_images(5, 3, 4, px));
  write_gz(tmp / "im.gz", idx_images(5, 3, 4, px));
  write_file(tmp / "lab", idx_labels(lab));
  write_gz(tmp / "lab.gz", idx_labels(lab));
  CHECK(read_file(tmp / "im.gz").at(0) == 0x1f);  // really gzipped
  for (const std::string suffix : {"", ".gz"}) {
    const IdxImages im = read_idx_images((tmp / ("im" + suffix)).string());
    CHECK(im.count == 5);
    CHECK(im.rows == 3);
    CHECK(im.cols == 4);
    CHECK(im.pixels == px);
    CHECK(read_idx_labels((tmp / ("lab" + suffix)).string()) == lab);
  }
  // Big-endian dimensions larger than a byte.
  const Bytes big = pixels_for(1, 300 * 2, 4);
  write_gz(tmp / "big.gz", idx_images(1, 300, 2, big));
  const IdxImages b = read_idx_images((tmp / "big.gz").string());
  CHECK(b.rows == 300);
  CHECK(b.pixels == big);
  // Zero images is a valid IDX file.
  write_file(tmp / "none", idx_images(0, 28, 28, {}));
  CHECK(read_idx_images((tmp / "none").string()).count == 0);
}

TEST_CASE("idx: bad files") {
  TempDir tmp("data_idx");
  const Bytes px = pixels_for(5, 12, 3);
  const std::string im = (tmp / "im").string(), lab = (tmp / "lab").string();
  check_error([&] { read_idx_images(im); }, "read_idx_images: no such file '" + im + "'");
  check_error([&] { read_idx_labels(lab); }, "read_idx_labels: no such file");
  // Wrong magic numbers, named.
  write_file(tmp / "lab", idx_labels({1, 2}));
  check_error([&] { read_idx_images(lab); },
              "'" + lab + "' has the wrong magic number 0x00000801 (that of an IDX label file); expected 0x00000803");
  write_file(tmp / "im", idx_images(5, 3, 4, px));
  check_error([&] { read_idx_labels(im); }, "wrong magic number 0x00000803");
  write_file(tmp / "im", idx_images(5, 3, 4, px, 0x0803ffff));
  check_error([&] { read_idx_images(im); }, "wrong magic number 0x0803ffff");
  // Payload shorter than the header says (plain and gzipped).
  Bytes shortb = idx_images(5, 3, 4, px);
  shortb.resize(shortb.size() - 7);
  write_file(tmp / "im", shortb);
  check_error([&] { read_idx_images(im); },
              "'" + im + "' is truncated: the header (5 images of 3 x 4) says 60 bytes of data follow, but only 53 do");
  write_gz(tmp / "im.gz", shortb);
  check_error([&] { read_idx_images(im + ".gz"); }, "only 53 do");
  Bytes shortl = idx_labels({1, 2, 3});
  shortl.pop_back();
  write_file(tmp / "lab", shortl);
  check_error([&] { read_idx_labels(lab); }, "says 3 bytes of data follow, but only 2 do");
  // Ends inside the header.
  write_file(tmp / "im", {0, 0, 8, 3, 0, 0});
  check_error([&] { read_idx_images(im); }, "ends inside the header (image count)");
  write_file(tmp / "im", {});
  check_error([&] { read_idx_images(im); }, "ends inside the header (magic number)");
  // Data after the payload.
  Bytes longb = idx_images(5, 3, 4, px);
  longb.push_back(0);
  write_file(tmp / "im", longb);
  check_error([&] { read_idx_images(im); }, "has data after the 60 bytes its header");
  // A truncated gzip file: cut the compressed stream (in its data and in its trailer).
  write_gz(tmp / "whole.gz", idx_images(5, 3, 4, px));
  const Bytes gz = read_file(tmp / "whole.gz");
  for (size_t keep : {gz.size() / 2, gz.size() - 4}) {
    write_file(tmp / "cut.gz", Bytes(gz.begin(), gz.begin() + static_cast<std::ptrdiff_t>(keep)));
    check_error([&] { read_idx_images((tmp / "cut.gz").string()); }, "cut.gz' is a truncated or corrupt gzip file");
  }
  // A corrupted gzip (bad CRC).
  Bytes bad = gz;
  bad[bad.size() - 6] ^= 0xff;
  write_file(tmp / "bad.gz", bad);
  check_error([&] { read_idx_images((tmp / "bad.gz").string()); }, "truncated or corrupt gzip file");
  // An implausible header is not an allocation.
  write_file(tmp / "im", idx_images(0xffffffff, 0xffff, 0xffff, {}));
  check_error([&] { read_idx_images(im); }, "implausible header");
}

TEST_CASE("fashion-mnist: tokens, labels, carving") {
  for (bool gz : {true, false}) {
    FashionFixture fx(gz);
    const Splits s = load_fashion_mnist(fx.dir.string(), 0);
    for (const Dataset* d : {&s.train, &s.test}) {
      CHECK(d->seq_len == 784);
      CHECK(d->vocab == 256);
      CHECK(d->classes == 10);
      CHECK(std::all_of(d->lengths.begin(), d->lengths.end(), [](int64_t l) { return l == 784; }));
    }
    CHECK(s.train.name == "fashion_mnist/train");
    REQUIRE(s.train.size() == 12);
    REQUIRE(s.test.size() == 4);
    CHECK(s.val.size() == 0);
    CHECK(std::equal(s.train.tokens.begin(), s.train.tokens.end(), fx.train_px.begin()));
    CHECK(std::equal(s.test.tokens.begin(), s.test.tokens.end(), fx.test_px.begin()));
    CHECK(std::equal(s.train.labels.begin(), s.train.labels.end(), fx.train_lab.begin()));
    CHECK(std::equal(s.test.labels.begin(), s.test.labels.end(), fx.test_lab.begin()));
  }
  FashionFixture fx;
  const Splits q = load_fashion_mnist(fx.dir.string(), 0, 0, 5);
  CHECK(q.train.size() == 5);
  CHECK(std::equal(q.train.tokens.begin(), q.train.tokens.end(), fx.train_px.begin()));
  CHECK(q.test.size() == 4);

  const Splits a = load_fashion_mnist(fx.dir.string(), 4, 3);
  CHECK(a.train.size() == 8);
  CHECK(a.val.size() == 4);
  CHECK(a.val.name == "fashion_mnist/val");
  // Pixel 0 of image i is (i * 784 * 31 + 1) & 255: distinct for the 12 images.
  std::set<int64_t> firsts;
  for (const Dataset* d : {&a.train, &a.val})
    for (int64_t i = 0; i < d->size(); ++i) firsts.insert(d->tokens[static_cast<size_t>(i * 784)]);
  CHECK(firsts.size() == 12);
  const Splits b = load_fashion_mnist(fx.dir.string(), 4, 3);
  CHECK(b.val.tokens == a.val.tokens);
  CHECK(b.val.labels == a.val.labels);
}

TEST_CASE("fashion-mnist: bad data") {
  check_error([] { load_fashion_mnist("/nonexistent/hkt_fmnist"); }, "'/nonexistent/hkt_fmnist' does not exist");
  {
    FashionFixture fx;
    fs::remove(fx.dir / "t10k-labels-idx1-ubyte.gz");
    check_error([&] { load_fashion_mnist(fx.dir.string(), 0); }, "missing file: neither '");
    check_error([&] { load_fashion_mnist(fx.dir.string(), 0); }, "t10k-labels-idx1-ubyte.gz' exists");
  }
  {
    FashionFixture fx;
    write_gz(fx.dir / "train-labels-idx1-ubyte.gz", idx_labels({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0}));
    check_error([&] { load_fashion_mnist(fx.dir.string(), 0); },
                "train-labels-idx1-ubyte.gz': label 10 is 10, expected 0..9");
  }
  {
    FashionFixture fx;
    write_gz(fx.dir / "t10k-labels-idx1-ubyte.gz", idx_labels({1, 2, 3}));
    check_error([&] { load_fashion_mnist(fx.dir.string(), 0); },
                "image/label count mismatch: '" + (fx.dir / "t10k-images-idx3-ubyte.gz").string() +
                    "' has 4 images but '" + (fx.dir / "t10k-labels-idx1-ubyte.gz").string() + "' has 3 labels");
  }
  {
    FashionFixture fx;
    write_gz(fx.dir / "t10k-images-idx3-ubyte.gz", idx_labels({1, 2, 3, 4}));
    check_error([&] { load_fashion_mnist(fx.dir.string(), 0); }, "t10k-images-idx3-ubyte.gz' has the wrong magic");
  }
  {
    FashionFixture fx;
    const Bytes gz = read_file(fx.dir / "train-images-idx3-ubyte.gz");
    write_file(fx.dir / "train-images-idx3-ubyte.gz", Bytes(gz.begin(), gz.begin() + 40));
    check_error([&] { load_fashion_mnist(fx.dir.string(), 0); }, "train-images-idx3-ubyte.gz' is a truncated");
  }
}

// ---- IMDB -------------------------------------------------------------------

namespace {

// aclImdb with 4 pos and 4 neg training reviews and 2 + 2 test reviews.
struct ImdbFixture {
  TempDir tmp{"data_imdb"};
  fs::path root = tmp / "aclImdb";
  ImdbFixture() {
    write_text(root / "train/pos/10_9.txt", "Great film!");
    write_text(root / "train/pos/2_7.txt", "ok");
    write_text(root / "train/pos/0_10.txt", std::string("caf\xc3\xa9 \xff", 7));
    write_text(root / "train/pos/3_8.txt", "Loved every minute of it, truly.");
    write_text(root / "train/neg/5_1.txt", "Awful.");
    write_text(root / "train/neg/11_2.txt", "bad");
    write_text(root / "train/neg/7_4.txt", "Not good, not terrible, just dull.");
    write_text(root / "train/neg/6_3.txt", "meh");
    write_text(root / "test/pos/0_7.txt", "fine");
    write_text(root / "test/pos/1_9.txt", "superb acting");
    write_text(root / "test/neg/0_2.txt", "boring");
    write_text(root / "test/neg/1_1.txt", "worst ever");
  }
};

std::string review(const Dataset& d, int64_t i) {
  std::string s;
  for (int64_t t = 0; t < d.lengths[i]; ++t) s += static_cast<char>(d.tokens[i * d.seq_len + t] - 1);
  return s;
}

}  // namespace

TEST_CASE("imdb: byte tokens, order, truncation") {
  ImdbFixture fx;
  for (const fs::path& dir : {fx.root, fx.tmp.path}) {
    const Splits s = load_imdb(dir.string(), 16, 0);
    CHECK(s.train.name == "imdb/train");
    CHECK(s.test.name == "imdb/test");
    CHECK(s.train.vocab == 257);
    CHECK(s.train.pad_id == 0);
    CHECK(s.train.classes == 2);
    CHECK(s.train.seq_len == 16);
    REQUIRE(s.train.size() == 8);
    REQUIRE(s.test.size() == 4);
    CHECK(s.val.size() == 0);
    // pos first, then neg; each folder sorted by file name.
    const std::vector<std::string> want = {
        std::string("caf\xc3\xa9 \xff", 7), "Great film!", "ok", "Loved every minu",
        "bad", "Awful.", "meh", "Not good, not te"};
    for (int64_t i = 0; i < 8; ++i) {
      CHECK(review(s.train, i) == want[i]);
      CHECK(s.train.labels[i] == (i < 4 ? 1 : 0));
    }
    CHECK(s.test.labels == std::vector<int64_t>{1, 1, 0, 0});
    CHECK(review(s.test, 1) == "superb acting");
  }
  const Splits s = load_imdb(fx.root.string(), 16, 0);
  // token = byte + 1, 0 = padding after the review.
  CHECK(s.train.lengths[1] == 11);
  CHECK(s.train.tokens[16 * 1 + 0] == 'G' + 1);
  CHECK(s.train.tokens[16 * 1 + 10] == '!' + 1);
  for (int t = 11; t < 16; ++t) CHECK(s.train.tokens[16 * 1 + t] == 0);
  CHECK(s.train.tokens[6] == 256);  // byte 0xff
  CHECK(s.train.tokens[3] == 0xc3 + 1);
  CHECK(s.train.lengths[3] == 16);  // truncated
  CHECK(s.train.lengths[7] == 16);
  // Default seq_len 1024: nothing truncated.
  const Splits full = load_imdb(fx.root.string(), 1024, 0);
  CHECK(full.train.seq_len == 1024);
  CHECK(review(full.train, 3) == "Loved every minute of it, truly.");
  const Batch b = full.train.batch({0, 7});
  CHECK(b.inputs.shape() == Shape{2, 1024});
}

TEST_CASE("imdb: validation carving and the balanced max_train subset") {
  ImdbFixture fx;
  const Splits a = load_imdb(fx.root.string(), 64, 3, 5);
  CHECK(a.train.size() == 5);
  CHECK(a.val.size() == 3);
  CHECK(a.val.name == "imdb/val");
  std::set<std::string> seen;
  for (const Dataset* d : {&a.train, &a.val})
    for (int64_t i = 0; i < d->size(); ++i) seen.insert(review(*d, i));
  CHECK(seen.size() == 8);  // disjoint and complete
  const Splits b = load_imdb(fx.root.string(), 64, 3, 5);
  CHECK(a.val.tokens == b.val.tokens);
  CHECK(a.train.labels == b.train.labels);

  const Splits q = load_imdb(fx.root.string(), 64, 0, 1, 4);
  REQUIRE(q.train.size() == 4);
  CHECK(q.train.labels == std::vector<int64_t>{1, 1, 0, 0});  // balanced, pos first
  CHECK(q.test.size() == 4);                                  // the test split stays whole
  const Splits q2 = load_imdb(fx.root.string(), 64, 0, 1, 4);
  CHECK(q2.train.tokens == q.train.tokens);
  // Picks stay in file order, and different seeds pick different reviews.
  const std::vector<std::string> pos_order = {std::string("caf\xc3\xa9 \xff", 7), "Great film!", "ok",
                                              "Loved every minute of it, truly."};
  const auto rank = [&](const std::string& r) { return std::find(pos_order.begin(), pos_order.end(), r) - pos_order.begin(); };
  CHECK(rank(review(q.train, 0)) < rank(review(q.train, 1)));
  std::set<std::string> picked;
  for (uint64_t seed = 0; seed < 12; ++seed) {
    const Splits r = load_imdb(fx.root.string(), 64, 0, seed, 3);
    CHECK(r.train.size() == 3);
    CHECK(std::count(r.train.labels.begin(), r.train.labels.end(), 1) == 1);
    for (int64_t i = 0; i < r.train.size(); ++i) picked.insert(review(r.train, i));
  }
  CHECK(picked.size() > 4);
  // max_train at or above the training set size: everything.
  CHECK(load_imdb(fx.root.string(), 64, 0, 0, 100).train.size() == 8);
}

TEST_CASE("imdb: bad data") {
  check_error([] { load_imdb("/nonexistent/hkt_imdb"); }, "'/nonexistent/hkt_imdb' does not exist");
  {
    TempDir t("data_empty");
    check_error([&] { load_imdb(t.path.string()); }, "holds neither train/ and test/ nor an aclImdb folder");
  }
  {
    ImdbFixture fx;
    fs::remove_all(fx.root / "test/neg");
    check_error([&] { load_imdb(fx.root.string(), 64, 0); },
                "missing folder '" + (fx.root / "test/neg").string() + "'");
  }
  {
    ImdbFixture fx;
    for (const auto& e : fs::directory_iterator(fx.root / "train/neg")) fs::remove(e.path());
    check_error([&] { load_imdb(fx.root.string(), 64, 0); },
                "empty split: no reviews (<id>_<rating>.txt files) in folder '" + (fx.root / "train/neg").string());
  }
  for (const std::string bad : {"review.txt", "12_5.text", "a1_5.txt", "12_.txt", "_3.txt", "4_0.txt", "4_11.txt",
                                "4_3_1.txt"}) {
    ImdbFixture fx;
    write_text(fx.root / "test/pos" / bad, "text");
    check_error([&] { load_imdb(fx.root.string(), 64, 0); },
                "file name '" + (fx.root / "test/pos" / bad).string() + "' does not match <id>_<rating>.txt");
  }
  {
    ImdbFixture fx;
    write_text(fx.root / "train/neg/8_2.txt", "");
    check_error([&] { load_imdb(fx.root.string(), 64, 0); },
                "empty review file '" + (fx.root / "train/neg/8_2.txt").string() + "'");
  }
  {
    ImdbFixture fx;
    check_error([&] { load_imdb(fx.root.string(), 0); }, "seq_len must be > 0");
    check_error([&] { load_imdb(fx.root.string(), 64, 8); }, "cannot carve 8 validation examples out of 8");
  }
}

TEST_CASE("sample: a seeded subset in original order") {
  hkt::tasks::Dataset d;
  d.name = "t/test";
  d.seq_len = 2;
  d.vocab = 5;
  d.classes = 3;
  for (int64_t i = 0; i < 10; ++i) d.add_tokens({1 + i % 4}, i % 3);
  const auto a = hkt::tasks::sample(d, 4, 7), b = hkt::tasks::sample(d, 4, 7), c = hkt::tasks::sample(d, 4, 8);
  CHECK(a.size() == 4);
  CHECK(a.tokens == b.tokens);
  CHECK(a.labels == b.labels);
  CHECK((a.tokens != c.tokens || a.labels != c.labels));
  CHECK(hkt::tasks::sample(d, 50, 7).size() == 10);
  const auto p = hkt::tasks::seeded_permutation(100, 3);
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 100; ++i) CHECK(sorted[i] == i);
}
