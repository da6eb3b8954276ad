#include "hkt/tasks/files.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

#include "hkt/core/error.hpp"

namespace hkt::tasks {

namespace fs = std::filesystem;

void write_file_atomic(const fs::path& path, std::string_view text, bool make_parent) {
  HKT_CHECK(!path.empty(), "write_file_atomic: the path is empty");
  std::error_code ec;
  if (make_parent && path.has_parent_path()) {
    fs::create_directories(path.parent_path(), ec);
    HKT_CHECK(!ec, "cannot create the folder '", path.parent_path().string(), "': ", ec.message());
  }
  const fs::path tmp = path.string() + ".tmp";
  bool ok = false;
  std::string why;
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) {
      why = std::strerror(errno);
    } else {
      f.write(text.data(), static_cast<std::streamsize>(text.size()));
      f.flush();
      ok = f.good();
      if (!ok) why = std::strerror(errno);
    }
  }
  if (!ok) {
    fs::remove(tmp, ec);
    throw Error(str_cat("cannot write '", tmp.string(), "': ", why));
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ec2;
    fs::remove(tmp, ec2);
    throw Error(str_cat("cannot rename '", tmp.string(), "' to '", path.string(), "': ", ec.message()));
  }
}

std::string read_text_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  HKT_CHECK(f, "cannot read '", path.string(), "': ", std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  HKT_CHECK(!f.bad(), "error while reading '", path.string(), "'");
  return ss.str();
}

}  // namespace hkt::tasks
