// The command-line conventions of every hkt executable (docs/tasks.md, "Command lines"):
// errors start with the program's name, an unknown option names the closest valid one,
// --version prints the version, git revision, build type and backends, and the exit
// statuses are 0 done, 1 failed while running, 2 bad command line or input, 128 + N
// stopped by signal N (130 SIGINT, 143 SIGTERM).
#pragma once
#include <CLI/CLI.hpp>
#include <cctype>
#include <iostream>
#include <string>
#include <vector>

#include "hkt/core/names.hpp"
#include "hkt/version.hpp"

namespace hkt::apps {

// The build's git revision, type and backends (generated/hkt_build_info.cpp, written by
// tools/cmake/build_info.cmake; the target hkt_build_info_obj).
const char* build_git_revision();
const char* build_type();
const char* build_backends();

inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// "hkt-train 0.1.0 (git 1a2b3c4d5e6f, Release build; backends: cpu (OpenBLAS, oneTBB), mpi)".
inline std::string version_text(const std::string& program) {
  std::string s = program + " " HKT_VERSION_STRING " (git " + build_git_revision() + ", " + build_type() +
                  " build; backends: " + build_backends() + ")";
  if (std::string(hkt::version()) != HKT_VERSION_STRING) s += "; linked to libhkt " + std::string(hkt::version());
  return s;
}

namespace detail {
inline void option_names(CLI::App& app, std::vector<std::string>& out) {
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) out.push_back("--" + l);
    for (const std::string& s : o->get_snames()) out.push_back("-" + s);
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) option_names(*sub, out);
}
// The first argument that looks like an option and is none of the app's (or its subcommands').
inline std::string unknown_option(CLI::App& app, int argc, char** argv, const std::vector<std::string>& known) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-' || std::isdigit(static_cast<unsigned char>(a[1])) || a[1] == '.') continue;
    const std::string name = a.substr(0, a.find('='));
    bool found = false;
    for (const std::string& k : known) found = found || k == name;
    if (!found) return name;
  }
  (void)app;
  return {};
}
}  // namespace detail

// Parses the command line (and adds --version). Returns -1 to go on, else the status to exit
// with: 0 after --help or --version, kExitUsage after a message "PROGRAM: error: ..." on stderr
// for an unknown option (with the closest valid one), a value that does not convert, a missing
// file, ...
inline int parse_command_line(CLI::App& app, int argc, char** argv) {
  std::string program = app.get_name();
  if (program.empty() && argc > 0) {
    program = argv[0];
    program = program.substr(program.rfind('/') + 1);
  }
  app.set_version_flag("--version", version_text(program),
                       "print the version, git revision, build type and backends, and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::vector<std::string> known;
    detail::option_names(app, known);
    const std::string bad = detail::unknown_option(app, argc, argv, known);
    std::string msg = e.what();
    if (!bad.empty()) msg = "unknown option '" + bad + "'" + did_you_mean(bad, known);
    std::cerr << program << ": error: " << msg << " (" << program << " --help lists the options)\n";
    return kExitUsage;
  }
  return -1;
}

}  // namespace hkt::apps
