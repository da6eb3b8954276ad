#include "hkt/core/safetensors.hpp"

#include "hkt/core/safe_open.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

namespace hkt {

// Safetensors data is little-endian; tensors are copied byte for byte.
static_assert(std::endian::native == std::endian::little, "hkt's safetensors I/O assumes a little-endian host");

namespace {

using json = nlohmann::json;

// Same limit as the reference implementation.
constexpr uint64_t kMaxHeaderSize = 100'000'000;
// A valid header is 3 levels deep (root, entry, shape); anything far deeper is abuse.
constexpr int kMaxDepth = 32;
constexpr size_t kMaxQuotedName = 200;

// 'name' with control characters, quotes and backslashes escaped, cut when very long.
std::string quote(std::string_view s) {
  std::string r = "'";
  const size_t n = std::min(s.size(), kMaxQuotedName);
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\'' || c == '\\') {
      r += '\\';
      r += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      r += "\\x";
      r += hex[c >> 4];
      r += hex[c & 15];
    } else {
      r += static_cast<char>(c);
    }
  }
  if (s.size() > n) r += str_cat("... (", s.size(), " bytes)");
  return r + "'";
}

const char* st_dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "F32";
    case DType::Float64: return "F64";
    case DType::Int64: return "I64";
    case DType::Bool: return "BOOL";
  }
  return "?";
}

// Position in the reference implementation's Dtype enum (its writer sorts by it, descending).
int st_dtype_rank(DType t) {
  switch (t) {
    case DType::Bool: return 0;
    case DType::Float32: return 11;
    case DType::Float64: return 12;
    case DType::Int64: return 13;
  }
  return -1;
}

std::optional<DType> dtype_from_st(std::string_view s) {
  if (s == "F32") return DType::Float32;
  if (s == "F64") return DType::Float64;
  if (s == "I64") return DType::Int64;
  if (s == "BOOL") return DType::Bool;
  return std::nullopt;
}

// Dtypes of the format that hkt has no type for.
bool is_known_st_dtype(std::string_view s) {
  static const char* const kNames[] = {"U8",  "I8",  "F8_E5M2", "F8_E4M3", "F8_E8M0", "I16",     "U16",
                                       "F16", "BF16", "I32",    "U32",     "U64",     "C64",     "F4",
                                       "F6_E2M3", "F6_E3M2"};
  for (const char* n : kNames)
    if (s == n) return true;
  return false;
}

using Sink = std::function<void(const char*, size_t)>;

struct Prepared {
  std::string header;  // the JSON, padded with spaces to a multiple of 8 bytes
  std::vector<size_t> order;  // indices into the tensor list, in buffer order
};

Prepared prepare(const std::vector<std::pair<std::string, Tensor>>& tensors,
                 const std::map<std::string, std::string>& metadata, const std::string& ctx) {
  std::set<std::string_view> names;
  for (const auto& [name, t] : tensors) {
    HKT_CHECK(name != "__metadata__", ctx, ": the tensor name '__metadata__' is reserved by the safetensors format");
    HKT_CHECK(names.insert(name).second, ctx, ": duplicate tensor name ", quote(name));
    HKT_CHECK(t.defined(), ctx, ": tensor ", quote(name), " is undefined");
    HKT_CHECK(t.device().is_cpu(), ctx, ": tensor ", quote(name), " is on ", t.device().str(),
              "; copy it to the cpu first");
  }
  Prepared p;
  p.order.resize(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) p.order[i] = i;
  std::sort(p.order.begin(), p.order.end(), [&](size_t a, size_t b) {
    const int ra = st_dtype_rank(tensors[a].second.dtype()), rb = st_dtype_rank(tensors[b].second.dtype());
    if (ra != rb) return ra > rb;
    return tensors[a].first < tensors[b].first;
  });

  // Built piecewise (keys in the reference writer's order, O(n) in the tensor
  // count); nlohmann encodes and escapes every string.
  try {
    std::string& h = p.header;
    h = "{";
    if (!metadata.empty()) {
      h += "\"__metadata__\":{";
      bool first = true;
      for (const auto& [k, v] : metadata) {
        if (!first) h += ',';
        first = false;
        h += json(k).dump();
        h += ':';
        h += json(v).dump();
      }
      h += '}';
    }
    uint64_t offset = 0;
    for (size_t i : p.order) {
      const auto& [name, t] = tensors[i];
      if (h.size() > 1) h += ',';
      h += json(name).dump();
      h += ":{\"dtype\":\"";
      h += st_dtype_name(t.dtype());
      h += "\",\"shape\":[";
      for (size_t d = 0; d < t.shape().size(); ++d) {
        if (d) h += ',';
        h += std::to_string(t.shape()[d]);
      }
      const uint64_t nbytes = static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype());
      h += str_cat("],\"data_offsets\":[", offset, ',', offset + nbytes, "]}");
      offset += nbytes;
    }
    h += '}';
  } catch (const json::exception& e) {
    // Names and metadata must be valid UTF-8.
    throw Error(str_cat(ctx, ": cannot encode the header (names and metadata must be valid UTF-8): ", e.what()));
  }
  p.header.append((8 - p.header.size() % 8) % 8, ' ');
  return p;
}

// The values of `t` in row-major logical order, raw little-endian bytes.
void write_tensor_data(const Tensor& t, const Sink& sink) {
  const int64_t n = t.numel();
  if (n == 0) return;
  const size_t es = dtype_size(t.dtype());
  const char* base = static_cast<const char*>(t.raw_data());
  if (t.is_contiguous()) {
    sink(base, static_cast<size_t>(n) * es);
    return;
  }
  constexpr size_t kChunk = 1 << 16;
  std::vector<char> buf;
  buf.reserve(kChunk + 8);
  for_each_offset(t.shape(), t.strides(), [&](int64_t, int64_t off) {
    const char* src = base + off * static_cast<int64_t>(es);
    buf.insert(buf.end(), src, src + es);
    if (buf.size() >= kChunk) {
      sink(buf.data(), buf.size());
      buf.clear();
    }
  });
  if (!buf.empty()) sink(buf.data(), buf.size());
}

void write_all(const std::vector<std::pair<std::string, Tensor>>& tensors, const Prepared& p, const Sink& sink) {
  const uint64_t n = p.header.size();
  char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  sink(len, 8);
  sink(p.header.data(), p.header.size());
  for (size_t i : p.order) write_tensor_data(tensors[i].second, sink);
}

// ---------------------------------------------------------------- reading

// Copies n bytes at absolute offset `off` of the source into dst.
using ReadAt = std::function<void(uint64_t off, char* dst, size_t n)>;

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

// A non-negative integer that fits in int64, or an explanation of what it is.
std::optional<uint64_t> as_size(const json& v, std::string& why) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      why = str_cat(u, " is too large");
      return std::nullopt;
    }
    return u;
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i >= 0) return static_cast<uint64_t>(i);
    why = str_cat(i, " is negative");
    return std::nullopt;
  }
  if (v.is_number_float()) {
    why = str_cat(v.dump(), " is not an integer");
    return std::nullopt;
  }
  why = str_cat("a ", v.type_name(), " is not an integer");
  return std::nullopt;
}

std::string shape_of_json(const json& s) {
  std::string d = s.dump();
  if (d.size() > kMaxQuotedName) d = d.substr(0, kMaxQuotedName) + "...";
  return d;
}

SafetensorsFile parse_impl(uint64_t file_size, const ReadAt& read, const std::string& src) {
  const std::string where = str_cat("safetensors ", quote(src), ": ");
  auto fail = [&](const auto&... parts) { return Error(str_cat(where, parts...)); };

  if (file_size < 8)
    throw fail("file is ", file_size, " bytes, too short to hold the 8-byte header length");
  unsigned char len[8];
  read(0, reinterpret_cast<char*>(len), 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n > kMaxHeaderSize)
    throw fail("header length ", n, " exceeds the limit of ", kMaxHeaderSize, " bytes (corrupt file?)");
  if (n > file_size - 8)
    throw fail("header length ", n, " runs past the end of the file (", file_size - 8,
               " bytes follow the length field)");
  const uint64_t buffer_size = file_size - 8 - n;

  std::string header(static_cast<size_t>(n), '\0');
  if (n > 0) read(8, header.data(), header.size());

  // Parse, rejecting duplicate keys (nlohmann would silently keep the last
  // one) and absurd nesting, from the parser's callback.
  struct Frame {
    bool is_object = false;
    std::string name;      // the key this object or array is the value of
    std::string last_key;  // the latest key read in this object
    std::set<std::string> keys;
  };
  std::vector<Frame> stack;
  json::parser_callback_t cb = [&](int depth, json::parse_event_t ev, json& parsed) -> bool {
    const auto d = static_cast<size_t>(std::max(depth, 0));
    switch (ev) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start: {
        if (d >= static_cast<size_t>(kMaxDepth))
          throw fail("header JSON is nested more than ", kMaxDepth, " levels deep");
        stack.resize(d);
        Frame f;
        f.is_object = ev == json::parse_event_t::object_start;
        if (d > 0 && stack[d - 1].is_object) f.name = stack[d - 1].last_key;
        stack.push_back(std::move(f));
        break;
      }
      case json::parse_event_t::key: {
        if (d == 0 || d > stack.size() || !stack[d - 1].is_object) break;  // cannot happen
        Frame& f = stack[d - 1];
        f.last_key = parsed.get<std::string>();
        if (!f.keys.insert(f.last_key).second) {
          if (d == 1) throw fail("duplicate key ", quote(f.last_key), " in the header");
          if (d == 2)
            throw fail("duplicate key ", quote(f.last_key), " in the entry for ", quote(f.name));
          throw fail("duplicate key ", quote(f.last_key), " in the header (nested under ", quote(f.name), ")");
        }
        break;
      }
      default: break;
    }
    return true;
  };
  json j;
  try {
    j = json::parse(header.begin(), header.end(), cb);
  } catch (const json::exception& e) {
    throw fail("header is not valid JSON: ", e.what());
  }
  if (!j.is_object()) throw fail("header is not a JSON object (found ", j.type_name(), ")");

  SafetensorsFile out;
  std::vector<Entry> entries;
  for (const auto& [name, v] : j.items()) {
    if (name == "__metadata__") {
      if (!v.is_object())
        throw fail("\"__metadata__\" must be an object mapping strings to strings, found ", v.type_name());
      for (const auto& [k, mv] : v.items()) {
        if (!mv.is_string())
          throw fail("\"__metadata__\" value for key ", quote(k), " must be a string, found ", mv.type_name());
        out.metadata.emplace(k, mv.get<std::string>());
      }
      continue;
    }
    const std::string tn = str_cat("tensor ", quote(name), ": ");
    if (!v.is_object()) throw fail(tn, "entry must be a JSON object, found ", v.type_name());
    for (const auto& [k, unused] : v.items()) {
      (void)unused;
      if (k != "dtype" && k != "shape" && k != "data_offsets")
        throw fail(tn, "unexpected key ", quote(k), " (an entry holds dtype, shape and data_offsets)");
    }
    for (const char* k : {"dtype", "shape", "data_offsets"})
      if (!v.contains(k)) throw fail(tn, "missing \"", k, "\"");

    Entry e;
    e.name = name;
    // dtype
    const json& jd = v["dtype"];
    if (!jd.is_string()) throw fail(tn, "\"dtype\" must be a string, found ", jd.type_name());
    const std::string& ds = jd.get_ref<const std::string&>();
    const auto dt = dtype_from_st(ds);
    if (!dt) {
      if (is_known_st_dtype(ds))
        throw fail(tn, "dtype ", ds, " is not supported by hkt (supported: F32, F64, I64, BOOL)");
      throw fail(tn, "unknown dtype ", quote(ds));
    }
    e.dtype = *dt;
    // shape; the product of its non-zero dims must fit in int64 (numel and strides then do)
    const json& js = v["shape"];
    if (!js.is_array()) throw fail(tn, "\"shape\" must be an array of non-negative integers, found ", js.type_name());
    uint64_t prod = 1;
    for (size_t i = 0; i < js.size(); ++i) {
      std::string why;
      const auto dim = as_size(js[i], why);
      if (!dim) throw fail(tn, "shape entry ", i, " is invalid: ", why, " (expected a non-negative integer)");
      e.shape.push_back(static_cast<int64_t>(*dim));
      if (*dim > 1) {
        if (prod > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / *dim)
          throw fail(tn, "shape ", shape_of_json(js), " has too many elements (the element count overflows)");
        prod *= *dim;
      }
    }
    const uint64_t numel = static_cast<uint64_t>(numel_of(e.shape));
    const uint64_t esize = dtype_size(e.dtype);
    if (numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / esize)
      throw fail(tn, "shape ", shape_of_json(js), " has too many elements (the byte size overflows)");
    const uint64_t nbytes = numel * esize;
    // data_offsets
    const json& jo = v["data_offsets"];
    if (!jo.is_array() || jo.size() != 2)
      throw fail(tn, "\"data_offsets\" must be an array of two integers [begin, end], found ",
                 jo.is_array() ? str_cat("an array of ", jo.size()) : std::string(jo.type_name()));
    for (size_t i = 0; i < 2; ++i) {
      std::string why;
      const auto o = as_size(jo[i], why);
      if (!o) throw fail(tn, "data_offsets[", i, "] is invalid: ", why, " (expected a non-negative integer)");
      (i == 0 ? e.begin : e.end) = *o;
    }
    if (e.end < e.begin) throw fail(tn, "data_offsets [", e.begin, ", ", e.end, "] end before they begin");
    if (e.end > buffer_size)
      throw fail(tn, "data_offsets [", e.begin, ", ", e.end, "] run past the end of the data buffer (",
                 buffer_size, " bytes)");
    if (e.end - e.begin != nbytes)
      throw fail(tn, "data_offsets [", e.begin, ", ", e.end, "] span ", e.end - e.begin, " bytes but ", ds,
                 " shape ", shape_str(e.shape), " needs ", nbytes, " bytes");
    entries.push_back(std::move(e));
  }

  // The tensors must tile the data buffer exactly: no overlaps, holes or trailing bytes.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t pos = 0;
  const Entry* prev = nullptr;  // the tensor that ends at pos
  for (const Entry& e : entries) {
    if (e.begin < pos)
      throw fail("tensor ", quote(e.name), " at [", e.begin, ", ", e.end, ") overlaps tensor ", quote(prev->name),
                 " at [", prev->begin, ", ", prev->end, ")");
    if (e.begin > pos)
      throw fail("gap in the data buffer: bytes [", pos, ", ", e.begin, ") before tensor ", quote(e.name),
                 " belong to no tensor");
    if (e.end > pos) {
      pos = e.end;
      prev = &e;
    }
  }
  if (pos != buffer_size)
    throw fail(buffer_size - pos, " trailing bytes in the data buffer: tensors cover ", pos, " of its ", buffer_size,
               " bytes");

  const uint64_t data_start = 8 + n;
  out.tensors.reserve(entries.size());
  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    const size_t nbytes = static_cast<size_t>(e.end - e.begin);
    if (nbytes > 0) read(data_start + e.begin, static_cast<char*>(t.raw_data()), nbytes);
    if (e.dtype == DType::Bool) {
      // Any byte other than 0 or 1 is not a bool (and reading it as one is UB).
      const auto* b = static_cast<const unsigned char*>(t.raw_data());
      for (size_t i = 0; i < nbytes; ++i)
        if (b[i] > 1)
          throw fail("tensor ", quote(e.name), ": BOOL element ", i, " is ", static_cast<int>(b[i]),
                     ", expected 0 or 1");
    }
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

std::string errno_str(int err) { return std::strerror(err); }

}  // namespace

const Tensor* SafetensorsFile::find(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

std::string serialize_safetensors(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                  const std::map<std::string, std::string>& metadata) {
  const Prepared p = prepare(tensors, metadata, "serialize_safetensors");
  std::string out;
  write_all(tensors, p, [&](const char* d, size_t n) { out.append(d, n); });
  return out;
}

SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& source_name) {
  return parse_impl(
      bytes.size(), [&](uint64_t off, char* dst, size_t n) { std::memcpy(dst, bytes.data() + off, n); },
      source_name);
}

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const std::string ctx = str_cat("save_safetensors ", quote(path));
  const Prepared p = prepare(tensors, metadata, ctx);  // validates before any file is created
  const std::string tmp = str_cat(path, ".tmp.", static_cast<long>(::getpid()));

  // No link is followed (hkt/core/safe_open.hpp): neither the file nor its temporary may be one.
  refuse_non_regular(path, ctx);
  const int fd = open_new_file(tmp, ctx);
  bool fd_open = true;
  try {
    write_all(tensors, p, [&](const char* d, size_t n) {
      while (n > 0) {
        const ssize_t w = ::write(fd, d, n);
        if (w < 0) {
          if (errno == EINTR) continue;
          throw Error(str_cat(ctx, ": write to ", quote(tmp), " failed: ", errno_str(errno)));
        }
        d += w;
        n -= static_cast<size_t>(w);
      }
    });
    if (::fsync(fd) != 0) throw Error(str_cat(ctx, ": fsync of ", quote(tmp), " failed: ", errno_str(errno)));
    fd_open = false;
    if (::close(fd) != 0) throw Error(str_cat(ctx, ": close of ", quote(tmp), " failed: ", errno_str(errno)));
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      throw Error(str_cat(ctx, ": cannot rename ", quote(tmp), " to it: ", errno_str(errno)));
  } catch (...) {
    if (fd_open) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  // Make the rename itself durable (best effort: some filesystems refuse to fsync a directory).
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

SafetensorsFile load_safetensors(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(str_cat("load_safetensors: cannot open ", quote(path), ": ", errno_str(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw Error(str_cat("load_safetensors: cannot stat ", quote(path), ": ", errno_str(errno)));
  if (!S_ISREG(st.st_mode)) throw Error(str_cat("load_safetensors: ", quote(path), " is not a regular file"));
  const auto size = static_cast<uint64_t>(st.st_size);
  return parse_impl(
      size,
      [&](uint64_t off, char* dst, size_t n) {
        while (n > 0) {
          const ssize_t r = ::pread(fd, dst, n, static_cast<off_t>(off));
          if (r < 0) {
            if (errno == EINTR) continue;
            throw Error(str_cat("safetensors ", quote(path), ": read failed: ", errno_str(errno)));
          }
          if (r == 0)
            throw Error(str_cat("safetensors ", quote(path), ": unexpected end of file (was it truncated while ",
                                "being read?)"));
          dst += r;
          n -= static_cast<size_t>(r);
          off += static_cast<uint64_t>(r);
        }
      },
      path);
}

}  // namespace hkt
