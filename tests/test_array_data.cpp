// The tokens and series tasks' readers (hkt/tasks/arrays.hpp, hkt/tasks/array_data.hpp): .npy headers
// parsed strictly and checked against the bytes present, .npz members through libzip, safetensors,
// and bad input (dtype, shape, ragged rows, NaN, ids and labels out of range) named by file and index.
#include <doctest/doctest.h>
#include <zip.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "helpers/check.hpp"
#include "helpers/temp_dir.hpp"
#include "hkt/core/safetensors.hpp"
#include "hkt/ops/factory.hpp"
#include "hkt/tasks/array_data.hpp"
#include "hkt/tasks/train.hpp"

using namespace hkt;
using namespace hkt::tasks;
using hkt::test::check_error;

namespace {

template <class T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// A version 1.0 .npy file, its header padded as NumPy pads it.
std::string npy(const std::string& descr, const std::string& shape, const std::string& data,
                const std::string& order = "False") {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': " + shape + ", }";
  h += std::string((64 - (10 + h.size() + 1) % 64) % 64, ' ') + "\n";
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  return out + h + data;
}

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A .npz of the given members ("inputs" -> .npy bytes), stored or deflated.
void write_npz(const std::string& path, const std::vector<std::pair<std::string, std::string>>& members,
               bool deflate = false) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  REQUIRE(z);
  for (const auto& [name, bytes] : members) {
    zip_source_t* s = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
    const zip_int64_t idx = zip_file_add(z, (name + ".npy").c_str(), s, ZIP_FL_OVERWRITE);
    REQUIRE(idx >= 0);
    zip_set_file_compression(z, static_cast<zip_uint64_t>(idx), deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
  }
  REQUIRE(zip_close(z) == 0);
}

std::string tokens_2x4() { return npy("<i8", "(2, 4)", raw(std::vector<int64_t>{3, 1, 4, 0, 5, 9, 0, 0})); }
std::string labels(const std::vector<int64_t>& y) { return npy("<i8", "(" + std::to_string(y.size()) + ",)", raw(y)); }

}  // namespace

TEST_CASE("npy: dtypes, byte orders and shapes as NumPy writes them") {
  const NumArray a = parse_npy(tokens_2x4(), "a.npy");
  CHECK(a.shape == std::vector<int64_t>{2, 4});
  CHECK(a.dtype() == "int64");
  CHECK(a.int_at(5) == 9);
  CHECK(a.index(5) == "[1, 1]");
  const NumArray b = parse_npy(npy(">i4", "(3,)", std::string("\xff\xff\xff\xfe\0\0\x01\0\0\0\0\x07", 12)), "b.npy");
  CHECK(b.int_at(0) == -2);
  CHECK(b.int_at(1) == 256);
  CHECK(b.int_at(2) == 7);
  const NumArray f = parse_npy(npy("<f4", "(2,)", raw(std::vector<float>{1.5f, -2.0f})), "f.npy");
  CHECK(f.float_at(1) == -2.0);
  CHECK(f.shape_str() == "(2,)");
  const NumArray u = parse_npy(npy("|u1", "(1, 2)", std::string("\xff\x01", 2)), "u.npy");
  CHECK(u.int_at(0) == 255);
  const NumArray s = parse_npy(npy("<f8", "()", raw(std::vector<double>{3.25})), "s.npy");
  CHECK(s.shape.empty());
  CHECK(s.float_at(0) == 3.25);
}

TEST_CASE("npy: bad headers and sizes are named before anything is allocated") {
  const std::string good = tokens_2x4();
  check_error([&] { parse_npy("PK\x03\x04 not npy at all", "x.npy"); }, "x.npy: not a .npy file");
  check_error([&] { parse_npy(good.substr(0, good.size() - 8), "t.npy"); },
              "t.npy: the header says shape (2, 4) of int64 (64 bytes of data), but 56 bytes follow it (a truncated");
  check_error([&] { parse_npy(good + "extra", "t.npy"); }, "but 69 bytes follow it");
  check_error([&] { parse_npy(good.substr(0, 40), "t.npy"); }, "t.npy: truncated: the .npy header claims 118 bytes");
  // A header that claims a huge shape: refused by its size, not allocated.
  check_error([&] { parse_npy(npy("<f8", "(1000000000, 1000000000)", ""), "big.npy"); }, "is too large");
  check_error([&] { parse_npy(npy("<f8", "(10000, 10000)", ""), "lie.npy"); },
              "lie.npy: the header says shape (10000, 10000) of float64 (800000000 bytes of data), but 0 bytes");
  check_error([&] { parse_npy(npy("|O", "(2,)", ""), "r.npy"); }, "r.npy: dtype object");
  check_error([&] { parse_npy(npy("<c16", "(2,)", ""), "c.npy"); }, "c.npy: unsupported dtype '<c16'");
  check_error([&] { parse_npy(npy("<i8", "(2, 4)", raw(std::vector<int64_t>(8)), "True"), "o.npy"); },
              "o.npy: the array is in Fortran order");
  std::string structured = good;
  structured.replace(structured.find("'<i8'"), 5, "[('a', '<i4')]");
  check_error([&] { parse_npy(structured, "s.npy"); }, "s.npy: a structured dtype");
  std::string nokey = good;
  nokey.replace(nokey.find("'shape'"), 7, "'shapes'");
  check_error([&] { parse_npy(nokey, "k.npy"); }, "k.npy: malformed .npy header at byte");
}

TEST_CASE("tokens: a .npy of ids with a .npy of labels; lengths from the pad id; ids and labels checked") {
  test::TempDir dir("arrays");
  write(dir.str("x.npy"), tokens_2x4());
  write(dir.str("y.npy"), labels({1, 0}));
  ArraySource s = read_array_source("tokens", dir.str("x.npy"), dir.str("y.npy"), true);
  ArrayTaskOptions opt;
  opt.pad_id = 0;
  ArrayEncoding enc = fit_array_encoding("tokens", s, opt, 0);
  CHECK(enc.vocab == 10);
  CHECK(enc.seq_len == 4);
  CHECK(enc.classes == std::vector<std::string>{"0", "1"});
  Dataset d = encode_arrays(s, enc, "tokens/train", true);
  CHECK(d.lengths == std::vector<int64_t>{3, 2});
  CHECK(d.labels == std::vector<int64_t>{1, 0});
  // Without a pad id every position is a token.
  CHECK(encode_arrays(s, fit_array_encoding("tokens", s, {}, 0), "t", true).lengths == std::vector<int64_t>{4, 4});
  // An id past the vocabulary (a given size), named by file and index.
  opt.vocab_size = 6;
  enc = fit_array_encoding("tokens", s, opt, 0);
  check_error([&] { encode_arrays(s, enc, "t", true); }, "x.npy[1, 1] = 9 is outside the vocabulary [0, 6)");
  // A label outside the classes named.
  opt.vocab_size = 0;
  opt.classes = {"neg", "pos"};
  enc = fit_array_encoding("tokens", s, opt, 0);
  write(dir.str("y3.npy"), labels({2, 0}));
  const ArraySource s3 = read_array_source("tokens", dir.str("x.npy"), dir.str("y3.npy"), true);
  check_error([&] { encode_arrays(s3, enc, "t", true); }, "y3.npy[0] = 2 is not a class (0..1: 0 'neg', 1 'pos')");
  // Wrong dtype, shape mismatch, a missing labels file, an all-padding row.
  write(dir.str("xf.npy"), npy("<f4", "(2, 4)", raw(std::vector<float>(8, 1.0f))));
  check_error([&] { read_array_source("tokens", dir.str("xf.npy"), dir.str("y.npy"), true); },
              "xf.npy: token ids must be integers, got float32 (real-valued features are the series task");
  write(dir.str("y1.npy"), labels({1}));
  check_error([&] { read_array_source("tokens", dir.str("x.npy"), dir.str("y1.npy"), true); },
              "y1.npy: 1 labels for 2 input rows");
  check_error([&] { read_array_source("tokens", dir.str("x.npy"), "", true); }, "a .npy file holds the inputs only");
  write(dir.str("x0.npy"), npy("<i8", "(1, 2)", raw(std::vector<int64_t>{0, 0})));
  write(dir.str("y0.npy"), labels({1}));
  const ArraySource s0 = read_array_source("tokens", dir.str("x0.npy"), dir.str("y0.npy"), true);
  opt = {};
  opt.pad_id = 0;
  check_error([&] { fit_array_encoding("tokens", s0, opt, 0); }, "x0.npy: row 0 is all padding (pad id 0)");
}

TEST_CASE("npz: arrays by name, stored or deflated; lengths; missing arrays listed; a cut file named") {
  test::TempDir dir("npz");
  for (const bool deflate : {false, true}) {
    const std::string path = dir.str(deflate ? "d.npz" : "s.npz");
    write_npz(path, {{"inputs", tokens_2x4()}, {"labels", labels({0, 1})}, {"lengths", labels({2, 4})}}, deflate);
    const ArraySource s = read_array_source("tokens", path, "", true);
    REQUIRE(s.lengths.has_value());
    const Dataset d = encode_arrays(s, fit_array_encoding("tokens", s, {}, 0), "t", true);
    CHECK(d.lengths == std::vector<int64_t>{2, 4});
    CHECK(d.tokens == std::vector<int64_t>{3, 1, 0, 0, 5, 9, 0, 0});  // past the length: padding
  }
  write_npz(dir.str("x.npz"), {{"x", tokens_2x4()}, {"y", labels({0, 1})}});
  check_error([&] { read_array_source("tokens", dir.str("x.npz"), "", true); },
              "x.npz: no array 'inputs' (the file has: x, y)");
  write_npz(dir.str("bad.npz"), {{"inputs", tokens_2x4()}, {"labels", labels({0, 1})}, {"lengths", labels({0, 4})}});
  const ArraySource bad = read_array_source("tokens", dir.str("bad.npz"), "", true);
  check_error([&] { fit_array_encoding("tokens", bad, {}, 0); }, "bad.npz: lengths[0] = 0 is outside [1, 4]");
  // A truncated .npz: the zip directory is at its end.
  std::ifstream in(dir.str("s.npz"), std::ios::binary);
  const std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write(dir.str("cut.npz"), whole.substr(0, whole.size() / 2));
  check_error([&] { read_array_source("tokens", dir.str("cut.npz"), "", true); }, "cut.npz: not a readable .npz");
  // In memory (the fuzz targets' entry), a member whose .npy lies about its size.
  std::string lying = tokens_2x4();
  lying.resize(lying.size() - 8);
  write_npz(dir.str("lie.npz"), {{"inputs", lying}});
  check_error([&] { read_array_file(dir.str("lie.npz"), {"inputs"}); }, "lie.npz: inputs: the header says shape");
}

TEST_CASE("series: [N, T, F] floats, NaN at a real position named, padding ignored, standardisation") {
  test::TempDir dir("series");
  const float nan = std::nanf("");
  // 2 rows, T = 3, F = 2; row 1 has length 2 and a NaN past it.
  const std::vector<float> x = {1, 10, 2, 20, 3, 30, 4, 40, 5, 50, nan, nan};
  write_npz(dir.str("s.npz"), {{"inputs", npy("<f4", "(2, 3, 2)", raw(x))},
                               {"labels", labels({0, 1})},
                               {"lengths", labels({3, 2})}});
  const ArraySource s = read_array_source("series", dir.str("s.npz"), "", true);
  ArrayEncoding enc = fit_array_encoding("series", s, {}, 0);
  CHECK(enc.features == 2);
  Dataset d = encode_arrays(s, enc, "series/train", true);
  fit_scale(enc, d);
  CHECK(enc.mean[0] == doctest::Approx(3.0));
  CHECK(enc.mean[1] == doctest::Approx(30.0));
  CHECK(enc.scale[1] == doctest::Approx(std::sqrt(200.0)));
  apply_scale(d, enc);
  CHECK(d.values[0] == doctest::Approx(-2.0 / std::sqrt(2.0)));
  CHECK(d.values[10] == 0.0f);  // padding stays 0
  const ArrayEncoding back = ArrayEncoding::from_json(enc.to_json(), "enc");
  CHECK(back.mean == enc.mean);
  CHECK(back.scale == enc.scale);
  // The NaN inside a row's length is an error naming the element.
  write_npz(dir.str("n.npz"), {{"inputs", npy("<f4", "(2, 3, 2)", raw(x))}, {"labels", labels({0, 1})}});
  const ArraySource sn = read_array_source("series", dir.str("n.npz"), "", true);
  check_error([&] { encode_arrays(sn, fit_array_encoding("series", sn, {}, 0), "t", true); },
              "n.npz: inputs[1, 2, 0] = nan is not a finite float32");
  // [N, T] is one feature; a bool array is not features.
  write(dir.str("x2.npy"), npy("<f8", "(2, 3)", raw(std::vector<double>{1, 2, 3, 4, 5, 6})));
  write(dir.str("y.npy"), labels({0, 1}));
  const ArraySource s2 = read_array_source("series", dir.str("x2.npy"), dir.str("y.npy"), true);
  CHECK(fit_array_encoding("series", s2, {}, 0).features == 1);
  write(dir.str("xb.npy"), npy("|b1", "(2, 3)", std::string(6, '\1')));
  check_error([&] { read_array_source("series", dir.str("xb.npy"), dir.str("y.npy"), true); },
              "xb.npy: features must be numbers, got bool");
}

TEST_CASE("safetensors: inputs, labels and lengths as hkt's tensors; load_arrays carves val and test seeded") {
  test::TempDir dir("st");
  std::vector<int64_t> ids(40 * 5), y(40);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(1 + i % 7);
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<int64_t>(i % 3);
  save_safetensors(dir.str("t.safetensors"), {{"inputs", from_vector(ids, {40, 5})}, {"labels", from_vector(y, {40})}});
  ArrayTaskOptions opt;
  opt.train = dir.str("t.safetensors");
  const Splits a = load_arrays("tokens", opt, 0, 0, 0, 0, 7);
  CHECK(a.train.size() == 32);
  CHECK(a.val.size() == 4);
  CHECK(a.test.size() == 4);
  CHECK(a.train.vocab == 8);
  CHECK(a.train.classes == 3);
  CHECK(a.encoding.find("\"vocab_size\": 8") != std::string::npos);
  const Splits b = load_arrays("tokens", opt, 0, 0, 0, 0, 7);
  CHECK(a.val.labels == b.val.labels);
  CHECK(a.test.tokens == b.test.tokens);
  check_error([&] { load_arrays("series", opt, 0, 0, 50, 0, 7); }, "cannot carve 50 validation rows out of 40");
  check_error([&] { load_arrays("tokens", opt, 3, 0, 0, 0, 7); }, "row 0 has 5 positions, more than seq_len 3");
  save_safetensors(dir.str("f.safetensors"), {{"inputs", from_vector(std::vector<float>(8, 1.0f), {2, 4})},
                                              {"labels", from_vector(std::vector<int64_t>{0, 1}, {2})}});
  check_error([&] { read_array_source("tokens", dir.str("f.safetensors"), "", true); },
              "f.safetensors: inputs: token ids must be integers, got float32");
}

TEST_CASE("TrainConfig: data.arrays round-trips through config.json and is checked against the task") {
  TrainConfig c;
  c.task = "tokens";
  c.steps = 1;
  c.data.arrays.train = "x.npy";
  c.data.arrays.train_labels = "y.npy";
  c.data.arrays.pad_id = 0;
  c.data.arrays.vocab_size = 12;
  c.data.arrays.classes = {"a", "b"};
  const TrainConfig back = TrainConfig::from_json(c.to_json());
  CHECK(back == c);
  CHECK(back.data.arrays == c.data.arrays);
  c.task = "series";
  check_error([&] { c.validate(); }, "vocab_size and pad_id (--vocab-size, --pad-id) apply to the tokens task only");
  c.task = "listops";
  check_error([&] { c.validate(); }, "data.arrays applies to the 'tokens' and 'series' tasks only, not 'listops'");
  TrainConfig none;
  none.task = "series";
  none.steps = 1;
  check_error([&] { none.validate(); }, "task 'series' needs a training file (data.arrays.train");
  check_error([&] { TrainConfig::from_json(R"({"task": "tokens", "steps": 1, "data": {"arrays": {"file": "x"}}})"); },
              "unknown key 'data.arrays.file'");
}
