// Container files of named arrays (see hkt/tasks/arrays.hpp): NumPy's .npz through libzip (stored
// and deflated members, Zip64, CRC checks), each member a .npy read by npy_from; safetensors through
// hkt's own reader.
#include <zip.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "hkt/core/error.hpp"
#include "hkt/core/safetensors.hpp"
#include "npy_stream.hpp"

namespace hkt::tasks {
namespace {

namespace fs = std::filesystem;

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
