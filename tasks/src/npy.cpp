// NumPy's .npy format (see hkt/tasks/arrays.hpp): the array type and the reader.
//
// The parser is our own, small and strict: the format is a fixed preamble and a Python dict literal
// (numpy.lib.format), and what matters here is checking the declared dtype and size against the
// bytes present before allocating, with errors that name the file. (xtensor's xnpy, the Debian
// candidate, reads with a compile-time element type and trusts the header's size.)
#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "hkt/core/error.hpp"
#include "npy_stream.hpp"

namespace hkt::tasks {

namespace fs = std::filesystem;

namespace {

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
    HKT_CHECK(descr && order && shape, name_, ": the .npy header lacks ",
              !descr ? "'descr'" : !order ? "'fortran_order'" : "'shape'");
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

}  // namespace

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
  for (size_t k = 0; k < len_bytes; ++k)
    hlen |= static_cast<uint64_t>(static_cast<unsigned char>(pre[8 + k])) << (8 * k);
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


}  // namespace hkt::tasks
