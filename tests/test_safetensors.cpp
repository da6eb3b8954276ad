// Safetensors I/O: round trips, the exact layout (checked by an independent
// reader), files written by hand as another tool would, malformed input, and
// atomic saves.
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "helpers/check.hpp"
#include "helpers/temp_dir.hpp"
#include "hkt/core/safetensors.hpp"

using namespace hkt;
using namespace hkt::test;
namespace fs = std::filesystem;

// The raw-byte expectations below are written explicitly as little-endian, and
// the library copies bytes as they are: both need a little-endian host.
static_assert(std::endian::native == std::endian::little, "these tests assume a little-endian host");

namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
}

// Explicit little-endian encodings, independent of the library.
void put_le(std::string& out, uint64_t v, int nbytes) {
  for (int i = 0; i < nbytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
std::string le_f32(const std::vector<float>& v) {
  std::string s;
  for (float x : v) put_le(s, std::bit_cast<uint32_t>(x), 4);
  return s;
}
std::string le_f64(const std::vector<double>& v) {
  std::string s;
  for (double x : v) put_le(s, std::bit_cast<uint64_t>(x), 8);
  return s;
}
std::string le_i64(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) put_le(s, static_cast<uint64_t>(x), 8);
  return s;
}

// 8-byte little-endian length, then the header, then the data buffer.
std::string file_of(const std::string& header, const std::string& data = "") {
  std::string s;
  put_le(s, header.size(), 8);
  return s + header + data;
}

Tensor bool_tensor(const std::vector<bool>& v, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::Bool);
  bool* p = t.data<bool>();
  for (size_t i = 0; i < v.size(); ++i) p[i] = v[i];
  return t;
}

// Logical values of any tensor, as the expected raw little-endian bytes.
std::string expected_bytes(const Tensor& t) {
  switch (t.dtype()) {
    case DType::Float32: return le_f32(t.to_vector<float>());
    case DType::Float64: return le_f64(t.to_vector<double>());
    case DType::Int64: return le_i64(t.to_vector<int64_t>());
    case DType::Bool: {
      std::string s;
      for (bool b : t.to_vector<bool>()) s += static_cast<char>(b ? 1 : 0);
      return s;
    }
  }
  return {};
}

const char* st_name(DType t) {
  switch (t) {
    case DType::Float32: return "F32";
    case DType::Float64: return "F64";
    case DType::Int64: return "I64";
    case DType::Bool: return "BOOL";
  }
  return "?";
}

template <class T>
void check_same(const Tensor& a, const Tensor& b) {
  CHECK(a.dtype() == b.dtype());
  CHECK(a.shape() == b.shape());
  CHECK(a.to_vector<T>() == b.to_vector<T>());
}

void check_same_any(const Tensor& a, const Tensor& b) {
  REQUIRE(a.dtype() == b.dtype());
  dispatch_all(a.dtype(), [&]<class T>() { check_same<T>(a, b); });
}

// The tensors used by several tests: every dtype, 0-d, empty, strided views.
std::vector<std::pair<std::string, Tensor>> sample_tensors() {
  Tensor base = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor f32base = from_vector(std::vector<float>{0.5f, -1.25f, 3e-8f, 7.f, 8.f, 9.f}, {6});
  return {
      {"w.f32", from_vector(std::vector<float>{1.5f, -2.f, 3.25f, 1e30f, -0.f, 6.f}, {2, 3})},
      {"w.f64", from_vector(std::vector<double>{3.141592653589793, -1e-300}, {2})},
      {"labels", from_vector(std::vector<int64_t>{-1, 0, 9007199254740993LL, INT64_MIN}, {4, 1})},
      {"mask", bool_tensor({true, false, true}, {3})},
      {"scalar", scalar_tensor(42.5, DType::Float64)},
      {"empty", zeros({0, 4})},
      {"empty.i64", zeros({3, 0}, {DType::Int64})},
      {"transposed", transpose(base, 0, 1)},                           // 3x2, not contiguous
      {"broadcast", Tensor::view_of(base, {2, 3}, {0, 1}, 3)},          // stride 0, offset 3
      {"strided", Tensor::view_of(f32base, {2}, {3}, 1)},               // every third from 1
      {"blocks.0.attn.wq.1.weight", from_vector(std::vector<float>{1, 2}, {1, 2})},
  };
}

}  // namespace

TEST_CASE("safetensors: round trip of every dtype, 0-d, empty and strided tensors, and metadata") {
  const auto ts = sample_tensors();
  REQUIRE(!ts[7].second.is_contiguous());
  REQUIRE(!ts[8].second.is_contiguous());
  const std::map<std::string, std::string> meta{{"format", "pt"}, {"step", "1200"}, {"note", "quote \" é \n"}};
  TempDir dir("safetensors");
  const std::string path = dir.str("model.safetensors");
  save_safetensors(path, ts, meta);
  for (const auto& f : {load_safetensors(path), parse_safetensors(serialize_safetensors(ts, meta))}) {
    CHECK(f.metadata == meta);
    REQUIRE(f.tensors.size() == ts.size());
    for (const auto& nt : ts) {
      const std::string& name = nt.first;
      const Tensor& t = nt.second;
      INFO("tensor " << name);
      const Tensor* got = f.find(name);
      REQUIRE(got != nullptr);
      // (Tensor::is_contiguous() is false for some empty shapes such as [3, 0]; not a storage property.)
      if (got->numel() > 0) CHECK(got->is_contiguous());
      CHECK(got->device() == Device::cpu());
      CHECK(!got->requires_grad());
      check_same_any(*got, t);
    }
    CHECK(f.find("nope") == nullptr);
    // Buffer order, as the reference writer lays it out: I64, F64, F32, BOOL, then by name.
    std::vector<std::string> names;
    for (const auto& [n, t] : f.tensors) names.push_back(n);
    CHECK(names == std::vector<std::string>{"empty.i64", "labels", "broadcast", "scalar", "transposed", "w.f64",
                                            "blocks.0.attn.wq.1.weight", "empty", "strided", "w.f32", "mask"});
  }
  CHECK(load_safetensors(path).find("scalar")->dim() == 0);
  CHECK(load_safetensors(path).find("broadcast")->to_vector<double>() == std::vector<double>{4, 5, 6, 4, 5, 6});
  CHECK(load_safetensors(path).find("strided")->to_vector<float>() == std::vector<float>{-1.25f, 8.f});
  // The file on disk is exactly the in-memory serialization.
  CHECK(read_bytes(path) == serialize_safetensors(ts, meta));

  // No tensors at all.
  const auto none = parse_safetensors(serialize_safetensors({}));
  CHECK(none.tensors.empty());
  CHECK(none.metadata.empty());
}

TEST_CASE("safetensors: an independent reader checks the layout of a saved file") {
  const auto ts = sample_tensors();
  const std::map<std::string, std::string> meta{{"framework", "hkt"}};
  TempDir dir("safetensors");
  const std::string path = dir.str("check.safetensors");
  save_safetensors(path, ts, meta);
  const std::string bytes = read_bytes(path);

  REQUIRE(bytes.size() >= 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  REQUIRE(8 + n <= bytes.size());
  CHECK((8 + n) % 8 == 0);  // data starts 8-byte aligned
  const std::string header = bytes.substr(8, n);
  CHECK(header.front() == '{');
  CHECK(header.find_last_not_of(' ') == header.rfind('}'));  // padded with spaces only
  const nlohmann::json j = nlohmann::json::parse(header);
  REQUIRE(j.is_object());
  CHECK(j.at("__metadata__") == nlohmann::json{{"framework", "hkt"}});
  CHECK(j.size() == ts.size() + 1);
  const std::string data = bytes.substr(8 + n);

  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const auto& nt : ts) {
    const std::string& name = nt.first;
    const Tensor& t = nt.second;
    INFO("tensor " << name);
    REQUIRE(j.contains(name));
    const auto& e = j.at(name);
    CHECK(e.size() == 3);
    CHECK(e.at("dtype") == st_name(t.dtype()));
    CHECK(e.at("shape").get<std::vector<int64_t>>() == t.shape());
    const auto off = e.at("data_offsets").get<std::vector<uint64_t>>();
    REQUIRE(off.size() == 2);
    REQUIRE(off[0] <= off[1]);
    REQUIRE(off[1] <= data.size());
    spans.emplace_back(off[0], off[1]);
    CHECK(data.substr(off[0], off[1] - off[0]) == expected_bytes(t));
  }
  std::sort(spans.begin(), spans.end());
  uint64_t pos = 0;
  for (const auto& [b, e] : spans) {
    CHECK(b == pos);  // contiguous from 0, no holes
    pos = e;
  }
  CHECK(pos == data.size());  // no trailing bytes
  // Each tensor's data is aligned to its element size (the reference writer's order guarantees it).
  for (const auto& [name, t] : ts)
    CHECK(j.at(name).at("data_offsets")[0].get<uint64_t>() % dtype_size(t.dtype()) == 0);
}

TEST_CASE("safetensors: byte-identical to the reference writer") {
  // Outputs of huggingface/safetensors' serialize() for the same inputs.
  const std::string one = serialize_safetensors(
      {{"attn.0", from_vector(std::vector<float>{0, 1, 2, 3, 4, 5}, {1, 2, 3})}});
  CHECK(one == file_of(R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})",
                       le_f32({0, 1, 2, 3, 4, 5})));
  CHECK(one.size() == 8 + 64 + 24);
  const std::string padded = serialize_safetensors(
      {{"attn0", from_vector(std::vector<float>{0, 1, 2, 3, 4, 5}, {1, 1, 2, 3})}});
  CHECK(padded == file_of(std::string(R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})") +
                              std::string(7, ' '),
                          le_f32({0, 1, 2, 3, 4, 5})));
  CHECK(serialize_safetensors({}) == file_of("{}      "));
  CHECK(serialize_safetensors({}, {{"framework", "pt"}}) == file_of(R"({"__metadata__":{"framework":"pt"}}     )"));
}

TEST_CASE("safetensors: reads a file written by hand as another tool would") {
  // Metadata first, keys of each entry in another order, whitespace and
  // newlines, entries listed in a different order than their data, a 0-d and
  // an empty tensor, header padded with spaces to 8 bytes.
  std::string header =
      "{\n  \"__metadata__\": {\"format\": \"np\", \"epoch\": \"3\"},\n"
      "  \"z.bias\": {\"data_offsets\": [32, 40], \"shape\": [], \"dtype\": \"F64\"},\n"
      "  \"a.weight\": {\"shape\": [2, 2], \"data_offsets\": [0, 16], \"dtype\": \"F32\"},\n"
      "  \"nothing\": {\"dtype\": \"F32\", \"data_offsets\": [16, 16], \"shape\": [0]},\n"
      "  \"ids\": {\"dtype\": \"I64\", \"shape\": [2], \"data_offsets\": [16, 32]},\n"
      "  \"keep\": {\"shape\": [1, 3], \"dtype\": \"BOOL\", \"data_offsets\": [40, 43]}\n}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string data;
  // a.weight: 1, -2, 0.5, 1024 as F32, little-endian by hand.
  for (uint32_t bits : {0x3f800000u, 0xc0000000u, 0x3f000000u, 0x44800000u}) put_le(data, bits, 4);
  put_le(data, 7, 8);                          // ids[0] = 7
  put_le(data, 0xfffffffffffffffeull, 8);      // ids[1] = -2
  put_le(data, 0x4009000000000000ull, 8);      // z.bias = 3.125
  data += std::string("\x01\x00\x01", 3);      // keep
  const std::string bytes = file_of(header, data);

  TempDir dir("safetensors");
  const std::string path = dir.str("foreign.safetensors");
  write_bytes(path, bytes);
  for (const auto& f : {load_safetensors(path), parse_safetensors(bytes)}) {
    CHECK(f.metadata == std::map<std::string, std::string>{{"format", "np"}, {"epoch", "3"}});
    REQUIRE(f.tensors.size() == 5);
    CHECK(f.find("a.weight")->shape() == Shape{2, 2});
    CHECK(f.find("a.weight")->to_vector<float>() == std::vector<float>{1.f, -2.f, 0.5f, 1024.f});
    CHECK(f.find("ids")->to_vector<int64_t>() == std::vector<int64_t>{7, -2});
    CHECK(f.find("z.bias")->dim() == 0);
    CHECK(f.find("z.bias")->item<double>() == 3.125);
    CHECK(f.find("nothing")->shape() == Shape{0});
    CHECK(f.find("nothing")->dtype() == DType::Float32);
    CHECK(f.find("keep")->to_vector<bool>() == std::vector<bool>{true, false, true});
    // Buffer order; the empty tensor at 16 comes before "ids" at [16, 32).
    std::vector<std::string> names;
    for (const auto& [n, t] : f.tensors) names.push_back(n);
    CHECK(names == std::vector<std::string>{"a.weight", "nothing", "ids", "z.bias", "keep"});
  }
}

TEST_CASE("safetensors: malformed input is rejected with a clear error") {
  const std::string ok_entry = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string eight(8, '\0');
  std::string huge_len;
  put_le(huge_len, 1ull << 40, 8);
  std::string past_end;
  put_le(past_end, 100, 8);
  past_end += "{}";
  std::string deep = std::string(100, '[') + std::string(100, ']');

  struct Case {
    const char* what;
    std::string bytes;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {"empty file", "", "file is 0 bytes, too short to hold the 8-byte header length"},
      {"short file", "\x01\x02\x03", "file is 3 bytes, too short"},
      {"absurd header length", huge_len + "{}", "header length 1099511627776 exceeds the limit of 100000000 bytes"},
      {"header past the end", past_end, "header length 100 runs past the end of the file (2 bytes follow"},
      {"zero-length header", file_of(""), "header is not valid JSON"},
      {"invalid JSON", file_of(R"({"w":{"dtype":)"), "header is not valid JSON"},
      {"trailing garbage in header", file_of("{}\x01"), "header is not valid JSON"},
      {"invalid UTF-8 in a key", file_of("{\"\xff\xfe\":1}"), "header is not valid JSON"},
      {"header is an array", file_of("[1,2]"), "header is not a JSON object (found array)"},
      {"absurd nesting", file_of(deep), "header JSON is nested more than 32 levels deep"},
      {"entry not an object", file_of(R"({"w":5})"), "tensor 'w': entry must be a JSON object, found number"},
      {"missing dtype", file_of(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", eight), "tensor 'w': missing \"dtype\""},
      {"missing shape", file_of(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", eight), "tensor 'w': missing \"shape\""},
      {"missing data_offsets", file_of(R"({"w":{"dtype":"F32","shape":[2]}})", eight),
       "tensor 'w': missing \"data_offsets\""},
      {"unexpected key", file_of(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"crc":1}})", eight),
       "tensor 'w': unexpected key 'crc'"},
      {"dtype not a string", file_of(R"({"w":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", eight),
       "tensor 'w': \"dtype\" must be a string, found number"},
      {"unknown dtype", file_of(R"({"w":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", eight),
       "tensor 'w': unknown dtype 'Q7'"},
      {"unsupported F16", file_of(R"({"h":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}})", eight),
       "tensor 'h': dtype F16 is not supported by hkt (supported: F32, F64, I64, BOOL)"},
      {"unsupported BF16", file_of(R"({"h":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}})", eight),
       "tensor 'h': dtype BF16 is not supported"},
      {"unsupported I32", file_of(R"({"i":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})", eight),
       "tensor 'i': dtype I32 is not supported"},
      {"unsupported U8", file_of(R"({"u":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}})", eight),
       "tensor 'u': dtype U8 is not supported"},
      {"shape not an array", file_of(R"({"w":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", eight),
       "tensor 'w': \"shape\" must be an array of non-negative integers, found number"},
      {"negative dim", file_of(R"({"w":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,8]}})", eight),
       "tensor 'w': shape entry 1 is invalid: -1 is negative"},
      {"fractional dim", file_of(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,8]}})", eight),
       "shape entry 0 is invalid: 1.5 is not an integer"},
      {"string dim", file_of(R"({"w":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}})", eight),
       "shape entry 0 is invalid: a string is not an integer"},
      {"dim beyond int64", file_of(R"({"w":{"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,8]}})", eight),
       "shape entry 0 is invalid: 9223372036854775808 is too large"},
      {"element count overflow",
       file_of(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}})"),
       "tensor 'w': shape [4294967296,4294967296,0] has too many elements (the element count overflows)"},
      {"byte size overflow", file_of(R"({"w":{"dtype":"I64","shape":[4611686018427387904],"data_offsets":[0,8]}})", eight),
       "has too many elements (the byte size overflows)"},
      {"offsets not a pair", file_of(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4,8]}})", eight),
       "tensor 'w': \"data_offsets\" must be an array of two integers [begin, end], found an array of 3"},
      {"offsets not an array", file_of(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":"0-8"}})", eight),
       "\"data_offsets\" must be an array of two integers [begin, end], found string"},
      {"negative offset", file_of(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", eight),
       "tensor 'w': data_offsets[0] is invalid: -8 is negative"},
      {"float offset", file_of(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8.0]}})", eight),
       "data_offsets[1] is invalid: 8.0 is not an integer"},
      {"decreasing offsets", file_of(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", eight),
       "tensor 'w': data_offsets [8, 0] end before they begin"},
      {"end beyond the buffer", file_of(R"({"w":{"dtype":"F32","shape":[100],"data_offsets":[0,400]}})", eight),
       "tensor 'w': data_offsets [0, 400] run past the end of the data buffer (8 bytes)"},
      {"absurd end offset", file_of(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551615]}})", eight),
       "data_offsets[1] is invalid: 18446744073709551615 is too large"},
      {"size mismatch", file_of(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight),
       "tensor 'w': data_offsets [0, 8] span 8 bytes but F32 shape [3] needs 12 bytes"},
      {"overlap",
       file_of("{" + ok_entry + R"(,"v":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", std::string(12, '\0')),
       "tensor 'v' at [4, 12) overlaps tensor 'w' at [0, 8)"},
      {"same offsets twice",
       file_of("{" + ok_entry + R"(,"v":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", eight),
       "overlaps tensor"},
      {"hole between tensors",
       file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
               std::string(12, '\0')),
       "gap in the data buffer: bytes [4, 8) before tensor 'b' belong to no tensor"},
      {"hole at the start", file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight),
       "gap in the data buffer: bytes [0, 4) before tensor 'a'"},
      {"trailing bytes", file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", eight),
       "4 trailing bytes in the data buffer: tensors cover 4 of its 8 bytes"},
      {"data but no tensors", file_of("{}", eight), "8 trailing bytes in the data buffer"},
      {"duplicate tensor name", file_of("{" + ok_entry + "," + ok_entry + "}", eight),
       "duplicate key 'w' in the header"},
      {"duplicate key in an entry",
       file_of(R"({"w":{"dtype":"F32","dtype":"F64","shape":[2],"data_offsets":[0,8]}})", eight),
       "duplicate key 'dtype' in the entry for 'w'"},
      {"duplicate metadata key", file_of(R"({"__metadata__":{"k":"a","k":"b"}})"),
       "duplicate key 'k' in the entry for '__metadata__'"},
      {"duplicate __metadata__", file_of(R"({"__metadata__":{},"__metadata__":{}})"),
       "duplicate key '__metadata__' in the header"},
      {"metadata not an object", file_of(R"({"__metadata__":["a"]})"),
       "\"__metadata__\" must be an object mapping strings to strings, found array"},
      {"metadata null", file_of(R"({"__metadata__":null})"),
       "\"__metadata__\" must be an object mapping strings to strings, found null"},
      {"metadata value not a string", file_of(R"({"__metadata__":{"epoch":3}})"),
       "\"__metadata__\" value for key 'epoch' must be a string, found number"},
      {"bool byte not 0 or 1", file_of(R"({"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", "\x01\x02"),
       "tensor 'm': BOOL element 1 is 2, expected 0 or 1"},
      {"control characters in a name are escaped",
       file_of("{\"a\\nb\":{\"dtype\":\"X\",\"shape\":[],\"data_offsets\":[0,0]}}"), "tensor 'a\\x0ab': unknown dtype 'X'"},
  };
  CHECK(cases.size() >= 12);
  for (const auto& c : cases) {
    INFO("case: " << c.what);
    check_error([&] { (void)parse_safetensors(c.bytes, "bad.safetensors"); }, c.needle);
    check_error([&] { (void)parse_safetensors(c.bytes, "bad.safetensors"); }, "safetensors 'bad.safetensors': ");
  }

  // The same through a file: the message names the path.
  TempDir dir("safetensors");
  const std::string path = dir.str("truncated.safetensors");
  const std::string good = serialize_safetensors(sample_tensors());
  write_bytes(path, good.substr(0, good.size() - 1));
  check_error([&] { (void)load_safetensors(path); }, "safetensors '" + path + "': ");
  check_error([&] { (void)load_safetensors(path); }, "run past the end of the data buffer");
  check_error([&] { (void)load_safetensors(dir.str("missing.safetensors")); },
              "load_safetensors: cannot open '" + dir.str("missing.safetensors") + "': No such file or directory");
  check_error([&] { (void)load_safetensors(dir.path.string()); }, "is not a regular file");
}

TEST_CASE("safetensors: truncated and mutated files never escape as anything but hkt::Error") {
  const std::string good = serialize_safetensors(sample_tensors(), {{"k", "v"}});
  REQUIRE_NOTHROW(parse_safetensors(good));
  int errors = 0;
  for (size_t len = 0; len < good.size(); ++len) {
    try {
      (void)parse_safetensors(std::string_view(good).substr(0, len));
    } catch (const Error&) {
      ++errors;
    }
  }
  CHECK(errors == static_cast<int>(good.size()));  // every proper prefix is invalid
  std::mt19937_64 rng(12345);
  int parsed = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string m = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      // Mostly in the length field and header, where the interesting parsing is.
      const size_t limit = rng() % 4 == 0 ? m.size() : std::min<size_t>(m.size(), 8 + 400);
      m[rng() % limit] = static_cast<char>(rng() % 256);
    }
    try {
      (void)parse_safetensors(m);
      ++parsed;
    } catch (const Error&) {
      ++rejected;
    }
  }
  CHECK(parsed + rejected == 3000);
  CHECK(rejected > 0);
}

TEST_CASE("safetensors: writer rejects bad input before touching the disk") {
  TempDir dir("safetensors");
  const std::string path = dir.str("x.safetensors");
  const Tensor t = zeros({2});
  check_error([&] { save_safetensors(path, {{"a", t}, {"a", t}}); }, "duplicate tensor name 'a'");
  check_error([&] { save_safetensors(path, {{"__metadata__", t}}); }, "'__metadata__' is reserved");
  check_error([&] { save_safetensors(path, {{"u", Tensor()}}); }, "tensor 'u' is undefined");
  check_error([&] { save_safetensors(path, {{"bad\xff", t}}); }, "must be valid UTF-8");
  check_error([&] { (void)serialize_safetensors({{"a", t}}, {{"k", "\xc3"}}); }, "serialize_safetensors: cannot encode");
  check_error([&] { save_safetensors(path, {{"a", t}, {"a", t}}); }, "save_safetensors '" + path + "'");
  CHECK(fs::is_empty(dir.path));
}

TEST_CASE("safetensors: save is atomic") {
  TempDir dir("safetensors");
  auto leftovers = [&] {
    int n = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir.path))
      if (e.path().filename().string().find(".tmp") != std::string::npos) ++n;
    return n;
  };
  // A folder that does not exist: throws naming the path, creates nothing.
  const std::string bad = dir.str("no/such/folder/m.safetensors");
  check_error([&] { save_safetensors(bad, {{"a", zeros({2})}}); }, "save_safetensors '" + bad + "'");
  check_error([&] { save_safetensors(bad, {{"a", zeros({2})}}); }, "No such file or directory");
  CHECK(fs::is_empty(dir.path));

  // A successful save leaves only the file.
  const std::string path = dir.str("m.safetensors");
  save_safetensors(path, {{"a", from_vector(std::vector<float>{1, 2}, {2})}});
  CHECK(leftovers() == 0);
  CHECK(fs::exists(path));
  CHECK(load_safetensors(path).find("a")->to_vector<float>() == std::vector<float>{1, 2});

  // Overwriting replaces the old contents completely (here with a smaller file).
  save_safetensors(path, {{"b", from_vector(std::vector<int64_t>{5}, {1})}}, {{"v", "2"}});
  CHECK(leftovers() == 0);
  const auto f = load_safetensors(path);
  CHECK(f.tensors.size() == 1);
  CHECK(f.find("a") == nullptr);
  CHECK(f.find("b")->to_vector<int64_t>() == std::vector<int64_t>{5});
  CHECK(f.metadata.at("v") == "2");

  // The target is a non-empty folder: refused before anything is written (no link or
  // folder is written over, hkt/core/safe_open.hpp); the folder stays, no temporary is left.
  const std::string folder = dir.str("taken");
  fs::create_directories(folder + "/inside");
  check_error([&] { save_safetensors(folder, {{"a", zeros({2})}}); },
              "save_safetensors '" + folder + "': '" + folder + "' is a folder, not a regular file");
  CHECK(fs::is_directory(folder));
  CHECK(leftovers() == 0);
}
