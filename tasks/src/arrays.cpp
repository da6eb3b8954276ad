// Numeric arrays from .npy, .npz and safetensors files (see hkt/tasks/arrays.hpp).
//
// The .npy parser is our own, small and strict: the format is a fixed preamble and a Python dict
// literal (numpy.lib.format), and what matters here is checking the declared dtype and size against
// the bytes present before allocating, with errors that name the file. (xtensor's xnpy, the Debian
// candidate, reads with a compile-time element type and trusts the header's size.) .npz members are
// read through libzip, which handles stored and deflated members, Zip64 and CRC checks.
#include "hkt/tasks/arrays.hpp"

#include <zip.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "hkt/core/error.hpp"
#include "hkt/core/safetensors.hpp"

namespace hkt::tasks {
namespace {

namespace fs = std::filesystem;

// Reads up to n bytes into dst, returns how many (0 at the end); throws on a read error.
using ReadFn = std::function<size_t(char*, size_t)>;

void read_exact(const ReadFn& read, char* dst, size_t n, const std::string& name, const char* what) {
  size_t got = 0;
  while (got < n) {
    const size_t r = read(dst + got, n - got);
    if (r == 0) break;
    got += r;
  }
  HKT_CHECK(got == n, name, ": truncated: the file ends inside ", what, " (", got, " of ", n, " bytes)");
}

// The Python dict literal of a .npy header: {'descr': '<i8', 'fortran_order': False, 'shape': (3, 4), }
class Header {
 public:
  Header(std::string_view s, const std::string& name) : s_(s), name_(name) {}

  void parse(NumArray& a) {
    bool descr = false, order = false, shape = false;
    expect('{');
    while (true) {
      skip();
      if (peek() == '}') break;
      const std::string key = string();
      expect(':');
      skip();
      if (key == "descr") {
        HKT_CHECK(!descr, name_, ": the .npy header names 'descr' twice");
        descr = true;
        HKT_CHECK(peek() != '[', name_, ": a structured dtype (a record array) is not supported; save a plain ",
                  "numeric array");
        set_dtype(a, string());
      } else if (key == "fortran_order") {
        HKT_CHECK(!order, name_, ": the .npy header names 'fortran_order' twice");
        order = true;
        HKT_CHECK(!boolean(), name_, ": the array is in Fortran order; save it in C order ",
                  "(numpy.ascontiguousarray)");
      } else if (key == "shape") {
        HKT_CHECK(!shape, name_, ": the .npy header names 'shape' twice");
        shape = true;
        a.shape = tuple();
      } else {
        fail(str_cat("unknown key '", key, "'"));
      }
      skip();
      if (peek() == ',') ++i_;
      else if (peek() != '}') fail("expected ',' or '}'");
    }
    ++i_;
    skip();
    HKT_CHECK(i_ == s_.size(), name_, ": text after the .npy header's closing '}'");
    HKT_CHECK(descr && order && shape, name_, ": the .npy header lacks ", !descr ? "'descr'" : !order ? "'fortran_order'" : "'shape'");
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(str_cat(name_, ": malformed .npy header at byte ", i_ + 1, ": ", why));
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    skip();
    if (peek() != c) fail(str_cat("expected '", c, "'"));
    ++i_;
  }
  std::string string() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    const size_t start = ++i_;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\') fail("escapes are not supported");
      ++i_;
    }
    if (i_ >= s_.size()) fail("a string is never closed");
    return std::string(s_.substr(start, i_++ - start));
  }
  bool boolean() {
    for (const auto& [word, value] : {std::pair<std::string_view, bool>{"True", true}, {"False", false}})
      if (s_.substr(i_, word.size()) == word) {
        i_ += word.size();
        return value;
      }
    fail("expected True or False");
  }
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> dims;
    while (true) {
      skip();
      if (peek() == ')') break;
      if (peek() < '0' || peek() > '9') fail("expected a dimension (a non-negative integer)");
      int64_t d = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (d > (int64_t{1} << 40)) fail("a dimension is too large");
        d = d * 10 + (s_[i_++] - '0');
      }
      if (peek() == 'L') ++i_;  // Python 2's long literal
      dims.push_back(d);
      if (dims.size() > 32) fail("more than 32 dimensions");
      skip();
      if (peek() == ',') ++i_;
      else if (peek() != ')') fail("expected ',' or ')' in the shape");
    }
    ++i_;
    return dims;
  }
  void set_dtype(NumArray& a, const std::string& d) {
    std::string t = d;
    char order = '=';
    if (!t.empty() && std::string_view("<>|=").find(t[0]) != std::string_view::npos) {
      order = t[0];
      t.erase(0, 1);
    }
    HKT_CHECK(t != "O", name_, ": dtype object: the array holds Python objects, as NumPy makes of rows of ",
              "different lengths (a ragged array); pad the rows to one length and give the lengths as an array");
    const bool ok = t == "b1" || t == "i1" || t == "i2" || t == "i4" || t == "i8" || t == "u1" || t == "u2" ||
                    t == "u4" || t == "u8" || t == "f4" || t == "f8";
    HKT_CHECK(ok, name_, ": unsupported dtype '", d.substr(0, 40),
              "' (read: bool, int8-64, uint8-64, float32, float64)");
    a.kind = t[0];
    a.itemsize = t[1] - '0';
    HKT_CHECK(!(order == '|' && a.itemsize > 1), name_, ": dtype '", d, "' has no byte order");
    a.big_endian = order == '>' && a.itemsize > 1;
  }

  std::string_view s_;
  size_t i_ = 0;
  const std::string& name_;
};

// A .npy from a stream of `total` bytes: the preamble, the header, then (checked against what is
// left) the data.
NumArray npy_from(const ReadFn& read, uint64_t total, const std::string& name) {
  char pre[12];
  HKT_CHECK(total >= 10, name, ": truncated: ", total, " bytes, shorter than a .npy preamble (10)");
  read_exact(read, pre, 8, name, "the .npy preamble");
  HKT_CHECK(std::memcmp(pre, "\x93NUMPY", 6) == 0, name, ": not a .npy file (it does not start with \\x93NUMPY)");
  const int major = static_cast<unsigned char>(pre[6]), minor = static_cast<unsigned char>(pre[7]);
  HKT_CHECK(major >= 1 && major <= 3 && minor == 0, name, ": .npy format version ", major, ".", minor,
            " is not known (1.0, 2.0, 3.0)");
  const size_t len_bytes = major == 1 ? 2 : 4;
  read_exact(read, pre + 8, len_bytes, name, "the .npy preamble");
  uint64_t hlen = 0;
  for (size_t k = 0; k < len_bytes; ++k) hlen |= static_cast<uint64_t>(static_cast<unsigned char>(pre[8 + k])) << (8 * k);
  const uint64_t start = 8 + len_bytes;
  HKT_CHECK(hlen <= (uint64_t{1} << 20), name, ": the .npy header claims ", hlen, " bytes (more than 1 MiB)");
  HKT_CHECK(start + hlen <= total, name, ": truncated: the .npy header claims ", hlen, " bytes, the file has ",
            total - start, " after the preamble");
  std::string header(hlen, '\0');
  read_exact(read, header.data(), hlen, name, "the .npy header");
  NumArray a;
  a.name = name;
  Header(header, name).parse(a);
  uint64_t elements = 1;
  for (int64_t d : a.shape) {
    HKT_CHECK(d == 0 || elements <= kMaxArrayBytes / static_cast<uint64_t>(d), name, ": shape ", a.shape_str(),
              " is too large (more than ", kMaxArrayBytes, " bytes)");
    elements *= static_cast<uint64_t>(d);
  }
  const uint64_t bytes = elements * static_cast<uint64_t>(a.itemsize);
  HKT_CHECK(bytes <= kMaxArrayBytes, name, ": shape ", a.shape_str(), " of ", a.dtype(), " is ", bytes,
            " bytes, more than the limit of ", kMaxArrayBytes);
  const uint64_t left = total - start - hlen;
  HKT_CHECK(left == bytes, name, ": the header says shape ", a.shape_str(), " of ", a.dtype(), " (", bytes,
            " bytes of data), but ", left, " bytes follow it", left < bytes ? " (a truncated file?)" : "");
  a.data.resize(bytes);
  read_exact(read, a.data.data(), bytes, name, "the data");
  return a;
}

// libzip's handles, closed on every path.
struct ZipArchive {
  zip_t* z = nullptr;
  ~ZipArchive() {
    if (z) zip_discard(z);
  }
};
struct ZipMember {
  zip_file_t* f = nullptr;
  ~ZipMember() {
    if (f) zip_fclose(f);
  }
};

ArrayFile npz_from(zip_t* z, const std::string& name, const std::vector<std::string>& wanted) {
  ArrayFile out;
  out.path = name;
  const zip_int64_t n = zip_get_num_entries(z, 0);
  HKT_CHECK(n >= 0 && n <= 65536, name, ": ", n, " members, more than the 65,536 a .npz may have here");
  std::set<std::string> names;
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* m = zip_get_name(z, static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW);
    HKT_CHECK(m, name, ": cannot read the name of member ", i, ": ", zip_strerror(z));
    std::string s = m;
    if (s.size() > 4 && s.compare(s.size() - 4, 4, ".npy") == 0) s.resize(s.size() - 4);
    else continue;  // not an array
    HKT_CHECK(names.insert(s).second, name, ": the array '", s.substr(0, 80), "' is stored twice");
  }
  out.names.assign(names.begin(), names.end());
  for (const std::string& w : wanted) {
    if (!names.count(w)) continue;
    const std::string member = name + ": " + w;
    const zip_int64_t idx = zip_name_locate(z, (w + ".npy").c_str(), ZIP_FL_ENC_RAW);
    zip_stat_t st;
    zip_stat_init(&st);
    HKT_CHECK(idx >= 0 && zip_stat_index(z, static_cast<zip_uint64_t>(idx), 0, &st) == 0 && (st.valid & ZIP_STAT_SIZE),
              member, ": cannot read the member's size: ", zip_strerror(z));
    HKT_CHECK(!(st.valid & ZIP_STAT_ENCRYPTION_METHOD) || st.encryption_method == ZIP_EM_NONE, member,
              ": the member is encrypted");
    ZipMember f{zip_fopen_index(z, static_cast<zip_uint64_t>(idx), 0)};
    HKT_CHECK(f.f, member, ": cannot open the member: ", zip_strerror(z));
    const ReadFn read = [&](char* dst, size_t k) -> size_t {
      const zip_int64_t r = zip_fread(f.f, dst, k);
      HKT_CHECK(r >= 0, member, ": cannot read the member: ", zip_file_strerror(f.f));
      return static_cast<size_t>(r);
    };
    NumArray a = npy_from(read, st.size, member);
    char extra;
    HKT_CHECK(read(&extra, 1) == 0, member, ": more bytes than the zip directory says");  // also checks the CRC
    out.arrays.emplace(w, std::move(a));
  }
  return out;
}

[[noreturn]] void zip_failed(const std::string& name, zip_error_t* e) {
  const std::string why = zip_error_strerror(e);
  zip_error_fini(e);
  throw Error(str_cat(name, ": not a readable .npz (zip) file: ", why));
}

ArrayFile from_safetensors(const SafetensorsFile& f, const std::string& name, const std::vector<std::string>& wanted) {
  ArrayFile out;
  out.path = name;
  for (const auto& [n, t] : f.tensors) {
    out.names.push_back(n);
    if (std::find(wanted.begin(), wanted.end(), n) == wanted.end()) continue;
    NumArray a;
    a.name = name + ": " + n;
    a.kind = t.dtype() == DType::Bool ? 'b' : t.dtype() == DType::Int64 ? 'i' : 'f';
    a.itemsize = static_cast<int>(dtype_size(t.dtype()));
    a.shape = t.shape();
    a.data.assign(static_cast<const char*>(t.raw_data()), static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
    out.arrays.emplace(n, std::move(a));
  }
  std::sort(out.names.begin(), out.names.end());
  return out;
}

}  // namespace

int64_t NumArray::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string NumArray::dtype() const {
  if (kind == 'b') return "bool";
  return str_cat(kind == 'i' ? "int" : kind == 'u' ? "uint" : "float", itemsize * 8);
}

std::string NumArray::shape_str() const {
  std::string s = "(";
  for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

std::string NumArray::index(int64_t flat) const {
  std::vector<int64_t> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    idx[k] = shape[k] > 0 ? flat % shape[k] : 0;
    flat = shape[k] > 0 ? flat / shape[k] : 0;
  }
  std::string s = "[";
  for (size_t k = 0; k < idx.size(); ++k) s += (k ? ", " : "") + std::to_string(idx[k]);
  return s + "]";
}

namespace {
// The raw bits of element `flat`, in host (little-endian) order.
uint64_t bits_at(const NumArray& a, int64_t flat) {
  const auto* p = reinterpret_cast<const unsigned char*>(a.data.data()) + flat * a.itemsize;
  const int n = std::min(a.itemsize, 8);
  uint64_t v = 0;
  for (int k = 0; k < n; ++k) v = (v << 8) | (a.big_endian ? p[k] : p[n - 1 - k]);  // most significant first
  return v;
}
}  // namespace

int64_t NumArray::int_at(int64_t flat) const {
  HKT_CHECK(is_integer(), name, ": element ", index(flat), " is ", dtype(), ", not an integer");
  const uint64_t v = bits_at(*this, flat);
  if (kind != 'i') {
    HKT_CHECK(v <= static_cast<uint64_t>(INT64_MAX), name, index(flat), " = ", v, " is out of int64's range");
    return static_cast<int64_t>(v);
  }
  const int shift = 64 - itemsize * 8;  // sign-extend
  return static_cast<int64_t>(v << shift) >> shift;
}

double NumArray::float_at(int64_t flat) const {
  if (kind == 'f') {
    const uint64_t v = bits_at(*this, flat);
    if (itemsize == 4) return std::bit_cast<float>(static_cast<uint32_t>(v));
    return std::bit_cast<double>(v);
  }
  if (kind == 'u' || kind == 'b') return static_cast<double>(bits_at(*this, flat));
  return static_cast<double>(int_at(flat));
}

NumArray read_npy(const std::string& path) {
  std::error_code ec;
  HKT_CHECK(fs::is_regular_file(path, ec), "'", path, "': no such file");
  const uint64_t total = fs::file_size(path, ec);
  HKT_CHECK(!ec, "'", path, "': cannot read its size: ", ec.message());
  std::ifstream in(path, std::ios::binary);
  HKT_CHECK(in, "'", path, "': cannot open it for reading");
  const ReadFn read = [&](char* dst, size_t n) -> size_t {
    in.read(dst, static_cast<std::streamsize>(n));
    HKT_CHECK(!in.bad(), path, ": read error");
    return static_cast<size_t>(in.gcount());
  };
  return npy_from(read, total, path);
}

NumArray parse_npy(std::string_view bytes, const std::string& name) {
  size_t pos = 0;
  const ReadFn read = [&](char* dst, size_t n) -> size_t {
    const size_t k = std::min(n, bytes.size() - pos);
    std::memcpy(dst, bytes.data() + pos, k);
    pos += k;
    return k;
  };
  return npy_from(read, bytes.size(), name);
}

const NumArray* ArrayFile::find(const std::string& name) const {
  auto it = arrays.find(name);
  return it == arrays.end() ? nullptr : &it->second;
}

std::string ArrayFile::names_str() const {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n.substr(0, 80);
  return s.empty() ? "none" : s;
}

std::string array_format_of(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".npy" ? "npy" : ext == ".npz" ? "npz" : ext == ".safetensors" ? "safetensors" : "";
}

ArrayFile read_array_file(const std::string& path, const std::vector<std::string>& wanted) {
  const std::string format = array_format_of(path);
  HKT_CHECK(format == "npz" || format == "safetensors", "'", path,
            "': the format comes from the extension: .npz or .safetensors (a file of named arrays), or .npy");
  std::error_code ec;
  HKT_CHECK(fs::is_regular_file(path, ec), "'", path, "': no such file");
  if (format == "safetensors") {
    try {
      return from_safetensors(load_safetensors(path), path, wanted);
    } catch (const Error& e) {
      const std::string what = e.what();
      throw Error(what.find(path) == std::string::npos ? path + ": " + what : what);
    }
  }
  int code = 0;
  ZipArchive z{zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code)};
  if (!z.z) {
    zip_error_t e;
    zip_error_init_with_code(&e, code);
    zip_failed(path, &e);
  }
  return npz_from(z.z, path, wanted);
}

ArrayFile parse_array_file(std::string_view bytes, const std::string& name, const std::string& format,
                           const std::vector<std::string>& wanted) {
  HKT_CHECK(format == "npz" || format == "safetensors", name, ": unknown array file format '", format, "'");
  if (format == "safetensors") return from_safetensors(parse_safetensors(bytes, name), name, wanted);
  zip_error_t e;
  zip_error_init(&e);
  zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &e);
  if (!src) zip_failed(name, &e);
  ZipArchive z{zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &e)};
  if (!z.z) {
    zip_source_free(src);
    zip_failed(name, &e);
  }
  zip_error_fini(&e);
  return npz_from(z.z, name, wanted);
}

}  // namespace hkt::tasks
