// hkt-predict: class predictions of a model trained on a user's own data (the text, tokens and
// series tasks) for new, unlabelled inputs (docs/tasks.md, "Your own data"). The run's encoding.json
// says how the inputs are read (text: the text column, the tokeniser and its vocabulary, the
// truncation rule; arrays: seq_len, the vocabulary size and pad id, the features' standardisation)
// and names the classes.
//
//   hkt-predict runs/reviews new.tsv                      # -> new.predictions.csv
//   hkt-predict runs/reviews new.csv --out p.jsonl --format jsonl --weights final
//   hkt-predict runs/series new.npz                       # arrays "inputs" (and "lengths")
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
#include "hkt/tasks/array_data.hpp"
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
  std::vector<std::string> classes;
  hkt::tasks::Dataset data;
  std::vector<int64_t> lines;  // text: the line each row starts on; arrays: none
  std::string truncate;        // text: the truncation rule
  int64_t truncated = 0;       // text: rows cut to seq_len
};

// The run's encoding and the file read and encoded with it: errors name the file and line (text)
// or the array and element (arrays).
Inputs read_inputs(const std::string& run, const std::string& file) {
  const fs::path encp = fs::path(run) / "encoding.json";
  HKT_CHECK(fs::is_regular_file(encp), "'", run, "' has no encoding.json: hkt-predict reads new inputs for runs of "
            "the text, tokens and series tasks (hkt-train --task text|tokens|series)");
  const std::string text = read_all(encp);
  json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    throw hkt::Error(encp.string() + ": not JSON (" + e.what() + ")");
  }
  Inputs in;
  if (j.is_object() && j.contains("task")) {  // the tokens and series tasks
    const auto enc = hkt::tasks::ArrayEncoding::from_json(text, encp.string());
    in.classes = enc.classes;
    in.data = hkt::tasks::encode_arrays(hkt::tasks::read_array_source(enc.task, file, "", false), enc, "predict",
                                        false);
    hkt::tasks::apply_scale(in.data, enc);
    return in;
  }
  const auto enc = hkt::tasks::TextEncoding::from_json(text, encp.string());
  hkt::tasks::TextFormat f = hkt::tasks::text_format_for(file);
  try {
    f.header = j.at("format").at("header").get<bool>();
    f.text_column = j.at("format").at("text_column").get<std::string>();
  } catch (const std::exception& e) {
    throw hkt::Error(encp.string() + ": " + e.what());
  }
  const hkt::tasks::TextTable table = hkt::tasks::read_text_table(file, f, false);
  hkt::tasks::EncodeStats stats;
  in.data = hkt::tasks::encode_table(table, enc, j.at("seq_len").get<int64_t>(), "predict", &stats);
  in.classes = enc.classes;
  in.lines = table.lines;
  in.truncate = enc.truncate;
  in.truncated = stats.truncated;
  return in;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hkt-predict: the predicted class and class probabilities of a model trained on your own data for "
               "each row of a file of new inputs, read as the run read its training file: text (.tsv, .txt or .csv; "
               "a label column is not needed and is ignored), tokens or series (.npy of inputs, or .npz / "
               ".safetensors with an array 'inputs' and optionally 'lengths'; labels are ignored). Writes one row "
               "per input: CSV (row, line for text, predicted, one p_CLASS column per class) or JSON lines.",
               "hkt-predict"};
  std::string run, file, out, format, weights = "best", device = "cpu";
  int64_t batch_size = 64, threads = 0;
  app.add_option("run", run, "run folder of hkt-train --task text, tokens or series")->required();
  app.add_option("file", file, "the inputs (text: .tsv, .txt or .csv; tokens, series: .npy, .npz or .safetensors)")
      ->required();
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
    HKT_CHECK(mc.vocab == in.data.vocab && mc.input_features == in.data.features &&
                  mc.classes == static_cast<int64_t>(in.classes.size()) && in.data.seq_len <= mc.max_len,
              "'", run, "': its encoding.json (vocabulary ", in.data.vocab, ", features ", in.data.features, ", ",
              in.classes.size(), " classes, seq_len ", in.data.seq_len, ") does not fit its model (vocabulary ",
              mc.vocab, ", features ", mc.input_features, ", ", mc.classes, " classes, max_len ", mc.max_len, ")");
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
    const int64_t N = in.data.size(), C = static_cast<int64_t>(in.classes.size());
    const bool text = !in.lines.empty();
    std::ostringstream os;
    os.precision(6);
    if (format == "csv") {
      os << (text ? "row,line,predicted" : "row,predicted");
      for (const std::string& c : in.classes) os << "," << csv_field("p_" + c);
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
          os << i << ",";
          if (text) os << in.lines[i] << ",";
          os << csv_field(in.classes[best]);
          for (int64_t c = 0; c < C; ++c) os << "," << pr[c];
          os << "\n";
        } else {
          json pj = json::object();
          for (int64_t c = 0; c < C; ++c) pj[in.classes[c]] = pr[c];
          json row = {{"row", i}};
          if (text) row["line"] = in.lines[i];
          row["predicted"] = in.classes[best];
          row["probabilities"] = pj;
          os << row.dump() << "\n";
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
    if (in.truncated > 0)
      std::cout << " (" << in.truncated << " inputs cut to " << in.data.seq_len << " tokens, truncate: " << in.truncate
                << ")";
    std::cout << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "hkt-predict: error: " << e.what() << "\n";
    return 1;
  }
}
