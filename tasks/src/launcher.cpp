// --launcher of hkt-compare and hkt-eval (distributed.hpp): the process replaces
// itself with `launcher... itself args...` (docs/distributed.md).
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "hkt/core/error.hpp"
#include "hkt/tasks/distributed.hpp"

namespace hkt::tasks {

int end_job(int status) {
  try {
    if (world().size > 1) abort_job(status);
  } catch (const std::exception&) {  // several processes but no MPI in this build: said already
  }
  return status;
}

std::vector<std::string> launcher_words(const std::string& command) {
  std::istringstream in(command);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  HKT_CHECK(!words.empty(), "--launcher: an empty command (give e.g. --launcher \"mpirun -np 2\")");
  return words;
}

void relaunch(const std::vector<std::string>& launcher, int argc, char** argv, const std::string& option) {
  HKT_CHECK(!launcher.empty(), option, ": an empty command");
  // Under a launcher already (a rank of a job): starting another job from every rank is a mistake.
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"})
    HKT_CHECK(std::getenv(v) == nullptr, option, ": this process already runs under an MPI launcher (", v,
              " is set); give ", option, " or start it with the launcher, not both");
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  HKT_CHECK(!ec, option, ": cannot find this executable (/proc/self/exe): ", ec.message());
  std::vector<std::string> words = launcher;
  words.push_back(self.string());
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == option) {
      ++i;  // and its value
      continue;
    }
    if (a.size() > option.size() && a.compare(0, option.size(), option) == 0 && a[option.size()] == '=') continue;
    words.push_back(a);
  }
  std::vector<char*> av;
  for (std::string& w : words) av.push_back(w.data());
  av.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  execvp(av[0], av.data());
  const int e = errno;
  throw Error(str_cat(option, ": cannot start '", launcher[0], "': ", std::strerror(e)));
}

}  // namespace hkt::tasks
