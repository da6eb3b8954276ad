// hkt-check-run RUN_DIR: checks that every checkpoint a run folder holds is
// readable, as tests/kill_resume.sh does after each kill -9:
//   checkpoint/ and checkpoint.old/ (when present): both safetensors files
//   parse, carry the same hkt.step, and the model file loads strictly into a
//   classifier built from its own hkt.model_config;
//   best.safetensors (when present): the same for the model.
// checkpoint.tmp/ is a save in progress and is never read by --resume, so it
// is not checked. Prints one line per item; exits 0 if all are readable, 1
// otherwise.
#include <filesystem>
#include <iostream>

#include "hkt/core/safetensors.hpp"
#include "hkt/models/checkpoint.hpp"
#include "hkt/models/classifier.hpp"

namespace {

namespace fs = std::filesystem;

std::string meta(const hkt::SafetensorsFile& f, const std::string& key, const std::string& path) {
  auto it = f.metadata.find(key);
  HKT_CHECK(it != f.metadata.end(), path, ": no '", key, "' in the metadata");
  return it->second;
}

// Loads a model file strictly into the classifier its metadata describes.
std::string check_model(const std::string& path) {
  const hkt::SafetensorsFile f = hkt::load_safetensors(path);
  hkt::nn::SequenceClassifier model(hkt::nn::ClassifierConfig::from_json(meta(f, "hkt.model_config", path)));
  hkt::nn::load_model(path, model, /*strict=*/true);
  return f.metadata.count("hkt.step") ? meta(f, "hkt.step", path) : std::string("-");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: hkt-check-run RUN_DIR\n";
    return 2;
  }
  const fs::path run(argv[1]);
  int bad = 0;
  for (const char* name : {"checkpoint", "checkpoint.old"}) {
    const fs::path d = run / name;
    if (!fs::exists(d)) continue;
    try {
      const std::string mp = (d / "model.safetensors").string(), op = (d / "optimizer.safetensors").string();
      const std::string step = check_model(mp);
      const std::string ostep = meta(hkt::load_safetensors(op), "hkt.step", op);
      HKT_CHECK(step == ostep, d.string(), ": model from step ", step, ", optimizer from step ", ostep);
      std::cout << "readable: " << name << "/ (step " << step << ")\n";
    } catch (const std::exception& e) {
      std::cout << "UNREADABLE: " << d.string() << ": " << e.what() << "\n";
      ++bad;
    }
  }
  const fs::path best = run / "best.safetensors";
  if (fs::exists(best)) {
    try {
      check_model(best.string());
      std::cout << "readable: best.safetensors\n";
    } catch (const std::exception& e) {
      std::cout << "UNREADABLE: " << best.string() << ": " << e.what() << "\n";
      ++bad;
    }
  }
  return bad == 0 ? 0 : 1;
}
