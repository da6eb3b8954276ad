// Helpers shared by the libFuzzer targets of the readers that take a path:
// each input is written into a private temporary folder, which is emptied
// before every input and removed at exit.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace hkt_fuzz {

namespace fs = std::filesystem;

// An empty folder of this process (the same one for every input).
inline fs::path fresh_dir() {
  static const fs::path dir = [] {
    std::string tmpl = (fs::temp_directory_path() / "hkt-fuzz-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) std::abort();
    const fs::path d = tmpl;
    static const fs::path keep = d;
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(keep, ec);
    });
    return d;
  }();
  for (const auto& e : fs::directory_iterator(dir)) fs::remove_all(e.path());
  return dir;
}

inline void write_file(const fs::path& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) std::abort();
}

// Reads little pieces off the front of the input.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(reinterpret_cast<const char*>(data)), n_(size) {}
  uint8_t byte() {
    if (n_ == 0) return 0;
    --n_;
    return static_cast<uint8_t>(*p_++);
  }
  uint16_t u16() { return static_cast<uint16_t>(byte() | (byte() << 8)); }
  std::string_view take(size_t k) {
    if (k > n_) k = n_;
    std::string_view s(p_, k);
    p_ += k;
    n_ -= k;
    return s;
  }
  std::string_view rest() { return take(n_); }
  size_t left() const { return n_; }

 private:
  const char* p_;
  size_t n_;
};

}  // namespace hkt_fuzz
