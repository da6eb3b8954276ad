// hkt-plot: gnuplot figures of training runs and analyses (docs/analysis.md).
//
//   hkt-plot runs/compare/hkt-small runs/compare/mha-small --out plots       # validation accuracy, HKT and MHA
//   hkt-plot runs/listops-hkt/analysis --out plots                           # kurtosis, spectra, lambda, cost
//
// Each argument is a run folder of hkt-train (it has metrics.jsonl) or an analysis folder of
// hkt-analyze (it has report.json). The curves of the runs are first written as CSV files into OUT;
// each figure is a gnuplot script (OUT/<name>.gp, kept so it can be edited and rerun) drawn from CSV
// files with the pngcairo (or svg) terminal.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "hkt/core/json_read.hpp"
#include "cli.hpp"
#include "hkt/core/safe_open.hpp"
#include "hkt/tasks/files.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// A failure of the plotting itself (gnuplot, a write): exit 1.
struct Fail : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Bad input (a missing or malformed folder or file): exit 2.
struct Bad : Fail {
  using Fail::Fail;
};

std::string read_text(const fs::path& p) {
  std::error_code ec;
  if (fs::is_directory(p, ec)) throw Bad("cannot read '" + p.string() + "': it is a folder");
  std::ifstream f(p, std::ios::binary);
  if (!f) throw Bad("cannot read '" + p.string() + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// JSON text within hkt's limits of size and nesting (hkt/core/json_read.hpp); a value that does not
// parse comes back discarded.
json parse_text(const std::string& text, const std::string& what) {
  try {
    hkt::check_json_text(text, what);
  } catch (const hkt::Error& e) {
    throw Bad(e.what());
  }
  return json::parse(text, nullptr, false);
}

// All or nothing, and never through a link (hkt/tasks/files.hpp): a link, FIFO or
// folder under the name is bad input (exit 2), any other failure a failure (exit 1).
void write_text(const fs::path& p, const std::string& text) {
  try {
    hkt::tasks::write_file_atomic(p, text);
  } catch (const hkt::UnsafeFileError& e) {
    throw Bad(e.what());
  } catch (const hkt::Error& e) {
    throw Fail(e.what());
  }
}

// A path inside a gnuplot single-quoted string.
std::string q(const fs::path& p) {
  const std::string s = p.string();
  if (s.find('\'') != std::string::npos) throw Bad("paths with a single quote are not supported: " + s);
  return "'" + s + "'";
}

struct Figure {
  std::string name, body;  // body: gnuplot commands after the terminal and output
};

class Plotter {
 public:
  Plotter(fs::path out, std::string format) : out_(std::move(out)), format_(std::move(format)) {}

  // Writes OUT/<name>.gp and runs gnuplot on it; the image is written under a temporary name first.
  void draw(const Figure& f) {
    const std::string ext = format_ == "svg" ? ".svg" : ".png";
    const fs::path img = out_ / (f.name + ext), tmp = out_ / (f.name + ".tmp" + ext), gp = out_ / (f.name + ".gp");
    // gnuplot opens the image itself: its temporary and its name must not be links either.
    for (const fs::path& p : {img, tmp}) {
      if (const std::string what = hkt::non_regular_entry(p.string()); !what.empty())
        throw Bad("'" + p.string() + "' is " + what + ", not a regular file; hkt-plot does not write through it");
      if (p == tmp) fs::remove(tmp);  // a leftover of a killed run
    }
    const std::string term = format_ == "svg" ? "set terminal svg size 800,500 dynamic enhanced font 'sans,11'\n"
                                              : "set terminal pngcairo size 800,500 enhanced font 'sans,10'\n";
    write_text(gp, term + "set output " + q(tmp) +
                       "\nset datafile separator ','\nset datafile missing 'nan'\nset grid\nset key outside right\n" +
                       f.body + "unset output\n");
    const std::string cmd = "gnuplot " + q(gp) + " 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      fs::remove(tmp);
      throw Fail("gnuplot failed on " + gp.string() +
                 " (is gnuplot installed? tools/setup.sh installs gnuplot-nox)");
    }
    fs::rename(tmp, img);
    std::cout << "wrote " << img.string() << "\n";
  }

 private:
  fs::path out_;
  std::string format_;
};

// A run's label in the legends: its preset and overrides (e.g. "hkt-small levels=1 (folder)") when they
// differ from the folder's name, so that runs of one preset stay apart; also the run's task into `task`.
std::string run_label(const fs::path& run, const std::string& folder, std::string& task) {
  try {
    std::string label = folder;
    const json c = parse_text(read_text(run / "config.json"), (run / "config.json").string());
    if (c.is_object() && c.contains("model") && c["model"].get<std::string>() != folder) {
      std::string model = c["model"].get<std::string>();
      if (c.contains("model_overrides") && c["model_overrides"].is_object())
        for (auto it = c["model_overrides"].begin(); it != c["model_overrides"].end(); ++it)
          model += " " + it.key() + "=" + it.value().dump();
      label = model + " (" + folder + ")";
    }
    if (c.is_object() && c.contains("task") && task.empty()) task = c["task"].get<std::string>();
    return label;
  } catch (const json::exception& ex) {  // a field of the wrong type
    throw Bad((run / "config.json").string() + ": " + ex.what());
  }
}

// Training curves: one CSV per run (eval events: step, epoch, val_acc, val_loss, test_acc, nan where the
// evaluation did not score the test set; train events in train<i>.csv: step, loss, acc, epoch), then
// validation accuracy and training loss of every run on one plot each, both against the same x axis.
void plot_runs(const std::vector<fs::path>& runs, const fs::path& out, Plotter& plt, std::string x_axis) {
  bool all_epochs = true;
  std::vector<std::string> labels;
  std::string task;
  for (size_t r = 0; r < runs.size(); ++r) {
    std::string label = runs[r].filename().string();
    if (fs::exists(runs[r] / "config.json")) label = run_label(runs[r], label, task);
    labels.push_back(label);
    std::istringstream in(read_text(runs[r] / "metrics.jsonl"));
    std::ostringstream ev, tr;
    ev << "step,epoch,val_acc,val_loss,test_acc\n";
    tr << "step,loss,acc,epoch\n";
    double steps_per_epoch = 0;  // from the eval events (epoch = step / steps per epoch)
    std::vector<std::array<double, 3>> train_rows;
    std::string line;
    int64_t n_eval = 0, lineno = 0;
    while (std::getline(in, line)) {
      ++lineno;
      if (line.empty()) continue;
      const json j = parse_text(line, (runs[r] / "metrics.jsonl").string() + ":" + std::to_string(lineno));
      // The last line may be torn by a kill while it was appended: skipped, as the trainer's resume does.
      if (!j.is_object() && in.peek() == std::char_traits<char>::eof()) break;
      if (!j.is_object()) throw Bad((runs[r] / "metrics.jsonl").string() + ":" + std::to_string(lineno) +
                                     ": not a JSON object");
      try {
        const std::string e = j.value("event", "");
        if (e == "eval") {
          ++n_eval;
          if (!j.contains("epoch")) all_epochs = false;
          ev << j.value("step", 0) << "," << (j.contains("epoch") ? j["epoch"].dump() : "nan") << ","
             << j.value("val_acc", 0.0) << "," << j.value("val_loss", 0.0) << ","
             << (j.contains("test_acc") ? j["test_acc"].dump() : "nan") << "\n";
          if (j.contains("epoch") && j["epoch"].get<double>() > 0)
            steps_per_epoch = j.value("step", 0) / j["epoch"].get<double>();
        } else if (e == "train") {
          train_rows.push_back({static_cast<double>(j.value("step", 0)), j.value("loss", 0.0), j.value("acc", 0.0)});
        }
      } catch (const json::exception& ex) {  // a field of the wrong type
        throw Bad((runs[r] / "metrics.jsonl").string() + ":" + std::to_string(lineno) + ": " + ex.what());
      }
    }
    if (n_eval == 0) throw Bad(runs[r].string() + ": metrics.jsonl has no evaluation yet (no \"eval\" event)");
    for (const auto& [st, l, a] : train_rows)
      tr << st << "," << l << "," << a << "," << (steps_per_epoch > 0 ? json(st / steps_per_epoch).dump() : "nan")
         << "\n";
    write_text(out / ("run" + std::to_string(r) + ".csv"), ev.str());
    write_text(out / ("train" + std::to_string(r) + ".csv"), tr.str());
  }
  if (x_axis == "auto") x_axis = all_epochs ? "epoch" : "step";
  if (x_axis == "epoch" && !all_epochs)
    throw Bad("--x epoch: some runs' metrics.jsonl have no epoch in their eval events");
  const int col = x_axis == "epoch" ? 2 : 1;
  std::ostringstream acc, loss;
  acc << "set title 'Validation accuracy" << (task.empty() ? "" : " (" + task + ")") << "'\nset xlabel '" << x_axis
      << "'\nset ylabel 'validation accuracy'\nplot ";
  loss << "set title 'Training loss" << (task.empty() ? "" : " (" + task + ")")
       << "'\nset xlabel '" << x_axis << "'\nset ylabel 'loss (mean over the log window)'\nplot ";
  for (size_t r = 0; r < runs.size(); ++r) {
    acc << (r ? ", " : "") << q(out / ("run" + std::to_string(r) + ".csv")) << " skip 1 using " << col
        << ":3 with linespoints title " << q(labels[r]);
    loss << (r ? ", " : "") << q(out / ("train" + std::to_string(r) + ".csv")) << " skip 1 using "
         << (x_axis == "epoch" ? 4 : 1) << ":2 with lines title "
         << q(labels[r]);
  }
  acc << "\n";
  loss << "\n";
  plt.draw({"val_acc", acc.str()});
  plt.draw({"train_loss", loss.str()});
}

// The figures of one analysis folder (hkt-analyze's CSV files).
void plot_analysis_json(const fs::path& dir, const std::string& prefix, Plotter& plt);
void plot_analysis(const fs::path& dir, const std::string& prefix, Plotter& plt) {
  try {
    plot_analysis_json(dir, prefix, plt);
  } catch (const json::exception& ex) {  // a report.json field missing or of the wrong type
    throw Bad((dir / "report.json").string() + ": " + ex.what());
  }
}
void plot_analysis_json(const fs::path& dir, const std::string& prefix, Plotter& plt) {
  const json rep = parse_text(read_text(dir / "report.json"), (dir / "report.json").string());
  if (rep.is_object() && rep.value("tool", "") == "hkt-analyze approx") {
    // approx.csv: run, levels, layer, rel_error, rel_error_fitted; the pooled rows (layer -1) of HKT runs.
    std::string fit;
    for (const std::string k : {"fit", "fit_fitted"})
      if (rep[k].contains("slope_95"))
        fit += ", exp(" + std::to_string(rep[k]["intercept"].get<double>()) + " + " +
               std::to_string(rep[k]["slope"].get<double>()) + " * x) dt 2 lc " + (k == "fit" ? "1" : "2") +
               " title 'log-linear fit" + (k == "fit" ? "'" : " (scalar per head)'");
    plt.draw({prefix + "approx",
              "set title 'Score error against the target'\nset key noenhanced\nset xlabel 'levels L'\n"
              "set ylabel 'relative Frobenius error'\nset xtics 1\nset offsets 0.25, 0.25, 0, 0\nset logscale y\nplot " + q(dir / "approx.csv") +
                  " skip 1 using 2:($3 == -1 && $2 > 0 ? $4 : 1/0) with points pt 7 lc 1 title 'rel. error', " +
                  q(dir / "approx.csv") +
                  " skip 1 using 2:($3 == -1 && $2 > 0 ? $5 : 1/0) with points pt 5 lc 2 title "
                  "'rel. error, a scalar per head'" + fit + "\n"});
    return;
  }
  if (!rep.is_object() || !rep.contains("model_config"))
    throw Bad((dir / "report.json").string() + ": not a report of hkt-analyze");
  const int64_t layers = rep["model_config"]["layers"].get<int64_t>();
  const std::string model = rep["model_config"]["attention"].get<std::string>();
  const std::string per_layer = " for [i=0:" + std::to_string(layers - 1) + "] ";
  // levels.csv column `col` against the level, one line per layer; `col2` > 0: a second, dashed set
  // (the whole layer's form next to the mean over heads).
  auto by_layer = [&](int col, const std::string& ylabel, const std::string& title, const std::string& extra,
                      int col2 = 0) {
    auto series = [&](int c, const std::string& what, const std::string& style) {
      return "plot" + per_layer + q(dir / "levels.csv") + " skip 1 using 2:($1==i ? $" + std::to_string(c) +
             " : 1/0) with linespoints " + style + " title sprintf('layer %d" + what + "', i)";
    };
    std::string plot = series(col, col2 > 0 ? ", mean over heads" : "", "lt i+1 pt 7");
    if (col2 > 0) plot += ", \\\n    " + series(col2, ", whole layer", "lt i+1 dt 2 pt 4").substr(4);
    return "set title '" + title + " (" + model + ")'\nset xlabel 'level l'\nset ylabel '" + ylabel +
           "'\nset xtics 1\n" + extra + plot + "\n";
  };
  plt.draw({prefix + "kurtosis",
            by_layer(3, "kappa = b_2 / (p(p+2))  (1 = Gaussian)", "Mardia kurtosis of the score vectors",
                     "set logscale y\n")});
  plt.draw({prefix + "excess_kurtosis",
            by_layer(4, "excess kurtosis of S_l entries (0 = Gaussian)", "Univariate excess kurtosis", "")});
  plt.draw({prefix + "directional_share",
            by_layer(6, "||Ma_l||_F / ||M_l||_F", "Directional share per level", "set yrange [0:1]\n", 9)});
  plt.draw({prefix + "frac_negative",
            by_layer(5, "fraction of negative eigenvalues of Ms_l", "PSD condition (0 = PSD)",
                     "set yrange [0:1]\n", 8)});
  if (model == "hkt") {
    plt.draw({prefix + "lambda",
              by_layer(7, "lambda_l (mean over heads)", "Level weights lambda per layer", "set yrange [0:*]\n")});
  }
  const int64_t levels = model == "hkt" ? rep["model_config"]["levels"].get<int64_t>() : 1;
  plt.draw({prefix + "eig_ms",
            "set title 'Eigenvalues of Ms_l = (M_l + M_l^T)/2, nonzero, all layers and heads (" + model +
                ")'\nset xlabel 'eigenvalue'\nset ylabel 'count'\nset xzeroaxis\nset arrow from 0, graph 0 to 0, "
                "graph 1 nohead dt 2\nplot for [l=0:" + std::to_string(levels - 1) + "] " + q(dir / "hist_ms.csv") +
                " skip 1 using 2:($1==l ? $3 : 1/0) with histeps title sprintf('level %d', l)\n"});
  plt.draw({prefix + "eig_ms_layer",
            "set title 'Eigenvalues of Ms_l of the whole layer (all heads), nonzero, all layers (" + model +
                ")'\nset xlabel 'eigenvalue'\nset ylabel 'count'\nset arrow from 0, graph 0 to 0, graph 1 nohead dt "
                "2\nplot for [l=0:" + std::to_string(levels - 1) + "] " + q(dir / "hist_ms_layer.csv") +
                " skip 1 using 2:($1==l ? $3 : 1/0) with histeps title sprintf('level %d', l)\n"});
  plt.draw({prefix + "eig_combined",
            "set title 'Eigenvalues of the symmetrised combined scores (" + model +
                ")'\nset xlabel 'eigenvalue'\nset ylabel 'count'\nset arrow from 0, graph 0 to 0, graph 1 nohead dt "
                "2\nset style fill solid 0.5\nplot " + q(dir / "hist_combined.csv") +
                " skip 1 using 1:2 with boxes title 'all layers, heads, samples'\n"});
  if (fs::exists(dir / "kurtosis_levels.csv")) {
    // kurtosis_levels.csv: level, kappa_entry, then one kappa column per window (means over layers, heads).
    std::istringstream head(read_text(dir / "kurtosis_levels.csv"));
    std::string header;
    std::getline(head, header);
    const int64_t cols = static_cast<int64_t>(std::count(header.begin(), header.end(), ',')) + 1;
    plt.draw({prefix + "kurtosis_dims",
              "set title 'Kurtosis of the scores at several dimensions, normalised to 1 = Gaussian (" + model +
                  ")'\nset xlabel 'level l'\nset ylabel 'kurtosis / Gaussian value'\nset xtics 1\nset logscale y\n"
                  "set key noenhanced\nplot for [c=2:" + std::to_string(cols) + "] " + q(dir / "kurtosis_levels.csv") +
                  " using 1:c with linespoints pt 7 title columnheader(c), 1 dt 2 lc 'black' title 'Gaussian', 33 "
                  "dt 3 lc 'red' title 'paper: about 33'\n"});
  }
  if (fs::exists(dir / "cost.csv")) {
    plt.draw({prefix + "cost",
              "set title 'Cost of HKT relative to MHA, one attention layer'\nset xlabel 'levels L'\nset ylabel "
              "'HKT / MHA'\nset xtics 1\nplot " + q(dir / "cost.csv") +
                  " skip 1 using 1:2 with linespoints title 'score FLOPs', " + q(dir / "cost.csv") +
                  " skip 1 using 1:5 with linespoints title 'measured time', 4.0/3 dt 2 title '4/3'\n"});
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "hkt-plot: draw figures with gnuplot. Each FOLDER is a run folder of hkt-train (metrics.jsonl: validation "
      "accuracy of all runs on one plot, and their training loss) or an analysis folder of hkt-analyze "
      "(report.json: kurtosis, directional share, fraction of negative eigenvalues and lambda per level, "
      "eigenvalue histograms, kurtosis at several dimensions, cost; or, from hkt-analyze approx, the score error "
      "against L). Writes OUT/*.png (or .svg), the CSV files they are drawn from and the "
      "gnuplot scripts (*.gp).",
      "hkt-plot"};
  std::vector<std::string> folders;
  std::string out = "plots", format = "png", x_axis = "auto";
  app.add_option("folders", folders, "run folders and/or analysis folders")->required();
  app.add_option("--out", out, "output folder (created)")->capture_default_str();
  app.add_option("--format", format, "png (pngcairo) or svg")
      ->check(CLI::IsMember({"png", "svg"}))
      ->capture_default_str();
  app.add_option("--x", x_axis, "x axis of the training curves: epoch, step, or auto (epoch when every run has it)")
      ->check(CLI::IsMember({"auto", "epoch", "step"}))
      ->capture_default_str();
  if (const int status = hkt::apps::parse_command_line(app, argc, argv); status >= 0) return status;
  try {
    std::vector<fs::path> runs, analyses;
    for (const std::string& f : folders) {
      if (!fs::is_directory(f)) throw Bad("'" + f + "' is not a folder");
      if (fs::exists(fs::path(f) / "metrics.jsonl")) runs.emplace_back(f);
      else if (fs::exists(fs::path(f) / "report.json")) analyses.emplace_back(f);
      else throw Bad("'" + f + "' is neither a run folder (no metrics.jsonl) nor an analysis folder (no report.json)");
    }
    fs::create_directories(out);
    Plotter plt(out, format);
    if (!runs.empty()) plot_runs(runs, out, plt, x_axis);
    for (size_t a = 0; a < analyses.size(); ++a)
      plot_analysis(analyses[a], analyses.size() > 1 ? "a" + std::to_string(a) + "_" : "", plt);
    return 0;
  } catch (const Bad& e) {
    std::cerr << "hkt-plot: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "hkt-plot: error: " << e.what() << "\n";
    return 1;
  }
}
