// hkt-predict: class predictions of a trained text-task model for new, unlabelled inputs
// (docs/tasks.md, "Your own data"). The run's encoding.json says how the inputs are read (the text
// column, the tokeniser and its vocabulary, the truncation rule) and names the classes.
//
//   hkt-predict runs/reviews new.tsv                      # -> new.predictions.csv
//   hkt-predict runs/reviews new.csv --out p.jsonl --format jsonl --weights final
#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.hpp"
#include "hkt/analysis/report.hpp"
#include "hkt/tasks.hpp"
#include "hkt/tasks/files.hpp"
#include "hkt/tasks/text_data.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A CSV field, quoted as RFC 4180 says when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  HKT_CHECK(in, "cannot read '", p.string(), "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Inputs {
  hkt::tasks::TextEncoding enc;
  hkt::tasks::TextTable table;
  hkt::tasks::Dataset data;
  hkt::tasks::EncodeStats stats;
};

// The run's encoding and the file read and encoded with it: errors name the file and line.
Inputs read_inputs(const std::string& run, const std::string& file) {
  const fs::path encp = fs::path(run) / "encoding.json";
  HKT_CHECK(fs::is_regular_file(encp), "'", run,
            "' has no encoding.json: hkt-predict reads new inputs for runs of the text task (hkt-train --task text)");
  const std::string text = read_all(encp);
  Inputs in;
  in.enc = hkt::tasks::TextEncoding::from_json(text, encp.string());
  const json j = json::parse(text);
  hkt::tasks::TextFormat f = hkt::tasks::text_format_for(file);
  f.header = j.at("format").at("header").get<bool>();
  f.text_column = j.at("format").at("text_column").get<std::string>();
  in.table = hkt::tasks::read_text_table(file, f, false);
  in.data = hkt::tasks::encode_table(in.table, in.enc, j.at("seq_len").get<int64_t>(), "predict", &in.stats);
  return in;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hkt-predict: the predicted class and class probabilities of a trained text-task model for each row "
               "of a file of new inputs (.tsv, .txt or .csv, read as the run read its training file; a label column "
               "is not needed and is ignored). Writes one row per input: CSV (row, line, predicted, one p_CLASS "
               "column per class) or JSON lines.",
               "hkt-predict"};
  std::string run, file, out, format, weights = "best", device = "cpu";
  int64_t batch_size = 64, threads = 0;
  app.add_option("run", run, "run folder of hkt-train --task text")->required();
  app.add_option("file", file, "the inputs (.tsv, .txt or .csv)")->required();
  app.add_option("--out", out, "output file (default: FILE's name with .predictions.csv or .predictions.jsonl)");
  app.add_option("--format", format, "csv or jsonl (default: from --out's extension, else csv)")
      ->check(CLI::IsMember({"csv", "jsonl"}));
  app.add_option("--weights", weights, "best (best.safetensors) or final (the last checkpoint)")
      ->check(CLI::IsMember({"best", "final"}))
      ->capture_default_str();
  app.add_option("--batch-size", batch_size, "inputs per forward pass")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16))
      ->capture_default_str();
  app.add_option("--device", device, "cpu, or cuda (needs a GPU and a CUDA build)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--threads", threads, "CPU threads (0 = all cores or HKT_NUM_THREADS)")->check(CLI::NonNegativeNumber);
  if (const int status = hkt::apps::parse_command_line(app, argc, argv); status >= 0) return status;
  hkt::analysis::LoadedModel lm;
  Inputs in;
  try {
    if (threads > 0) hkt::set_num_threads(static_cast<int>(threads));
    HKT_CHECK(fs::is_directory(run), "'", run, "' is not a run folder");
    if (device == "cuda" && !hkt::cuda_is_available())
      throw hkt::Error("--device cuda: CUDA is not available: " + hkt::cuda_unavailable_reason() + " (use --device cpu)");
    in = read_inputs(run, file);
    lm = hkt::analysis::load_trained(run, weights);
    const auto& mc = lm.config;
    HKT_CHECK(mc.vocab == in.enc.vocab_size() && mc.classes == static_cast<int64_t>(in.enc.classes.size()) &&
                  in.data.seq_len <= mc.max_len,
              "'", run, "': its encoding.json (vocabulary ", in.enc.vocab_size(), ", ", in.enc.classes.size(),
              " classes) does not fit its model (vocabulary ", mc.vocab, ", ", mc.classes, " classes)");
    if (format.empty()) format = fs::path(out).extension() == ".jsonl" ? "jsonl" : "csv";
    if (out.empty()) out = (fs::path(file).parent_path() / fs::path(file).stem()).string() + ".predictions." + format;
  } catch (const std::exception& e) {
    std::cerr << "hkt-predict: error: " << e.what() << "\n";
    return 2;
  }
  try {
    if (device == "cuda") lm.model->to(hkt::Device::cuda());
    lm.model->eval();
    hkt::NoGradGuard ng;
    const int64_t N = in.data.size(), C = static_cast<int64_t>(in.enc.classes.size());
    std::ostringstream os;
    os.precision(6);
    if (format == "csv") {
      os << "row,line,predicted";
      for (const std::string& c : in.enc.classes) os << "," << csv_field("p_" + c);
      os << "\n";
    }
    auto last = std::chrono::steady_clock::now();
    for (int64_t lo = 0; lo < N; lo += batch_size) {
      const int64_t hi = std::min(N, lo + batch_size);
      std::vector<int64_t> idx;
      for (int64_t i = lo; i < hi; ++i) idx.push_back(i);
      hkt::tasks::Batch b = in.data.batch(idx);
      hkt::Tensor inputs = b.inputs, valid = b.valid;
      if (device == "cuda") {
        inputs = hkt::to_device(inputs, hkt::Device::cuda());
        valid = hkt::to_device(valid, hkt::Device::cuda());
      }
      const hkt::Tensor p = hkt::to_device(hkt::softmax(lm.model->forward(inputs, valid), -1), hkt::Device::cpu());
      const std::vector<float> probs = hkt::to_dtype(hkt::contiguous(p), hkt::DType::Float32).to_vector<float>();
      for (int64_t i = lo; i < hi; ++i) {
        const float* pr = probs.data() + (i - lo) * C;
        const int64_t best = std::max_element(pr, pr + C) - pr;
        if (format == "csv") {
          os << i << "," << in.table.lines[i] << "," << csv_field(in.enc.classes[best]);
          for (int64_t c = 0; c < C; ++c) os << "," << pr[c];
          os << "\n";
        } else {
          json pj = json::object();
          for (int64_t c = 0; c < C; ++c) pj[in.enc.classes[c]] = pr[c];
          os << json{{"row", i}, {"line", in.table.lines[i]}, {"predicted", in.enc.classes[best]}, {"probabilities", pj}}
                    .dump()
             << "\n";
        }
      }
      const auto now = std::chrono::steady_clock::now();
      if (now - last > std::chrono::seconds(1) || hi == N) {
        std::cerr << "\rhkt-predict: " << hi << " / " << N << " inputs" << std::flush;
        last = now;
      }
    }
    std::cerr << "\n";
    hkt::tasks::write_file_atomic(out, os.str());
    std::cout << "hkt-predict: " << N << " predictions of " << lm.weights << " written to " << out;
    if (in.stats.truncated > 0) std::cout << " (" << in.stats.truncated << " inputs cut to " << in.data.seq_len
                                          << " tokens, truncate: " << in.enc.truncate << ")";
    std::cout << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "hkt-predict: error: " << e.what() << "\n";
    return 1;
  }
}
