// The task registry: names -> splits (see registry.hpp).
#include "hkt/tasks/registry.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "hkt/core/error.hpp"
#include "hkt/core/names.hpp"
#include "hkt/core/random.hpp"

#include "hkt/tasks/images.hpp"
#include "hkt/tasks/imdb.hpp"
#include "hkt/tasks/listops.hpp"

namespace hkt::tasks {
namespace {

namespace fs = std::filesystem;

// `root/sub` when it is a folder, else `root`.
[[maybe_unused]] std::string data_folder(const TaskOptions& opt, const std::string& sub) {
  const std::string root = opt.data_dir.empty() ? default_data_dir() : opt.data_dir;
  std::error_code ec;
  if (fs::is_directory(fs::path(root) / sub, ec)) return (fs::path(root) / sub).string();
  return root;
}

// Fashion-MNIST: data_dir/fashion-mnist, else (no --data-dir given) where Debian's
// dataset-fashion-mnist package puts it, else data_dir.
[[maybe_unused]] std::string fashion_folder(const TaskOptions& opt) {
  const std::string root = opt.data_dir.empty() ? default_data_dir() : opt.data_dir;
  std::error_code ec;
  if (fs::is_directory(fs::path(root) / "fashion-mnist", ec)) return (fs::path(root) / "fashion-mnist").string();
  if (opt.data_dir.empty() && fs::is_directory("/usr/share/datasets/fashion-mnist", ec))
    return "/usr/share/datasets/fashion-mnist";
  return root;
}

int64_t or_default(int64_t v, int64_t def) { return v > 0 ? v : def; }

// Throws, naming the command that fetches the data set, when `folder` (where the loader of
// `task` will look) holds none of `markers`: the data are missing, not malformed. hkt-data
// puts them in $HKT_DATA/<its folder>, which data_folder / fashion_folder look at first.
void require_data(const std::string& task, const TaskOptions& opt, const std::string& folder,
                  const std::vector<std::string>& markers) {
  std::error_code ec;
  (void)fs::status(folder, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)  // a link loop, no permission, ...: not "missing"
    throw Error(str_cat("load_task: the data of task ", task, ": '", folder, "' cannot be read: ", ec.message()));
  for (const auto& m : markers)
    if (fs::exists(fs::path(folder) / m, ec)) return;
  std::string env;
  if (!opt.data_dir.empty() && opt.data_dir != default_data_dir()) {
    std::string root = fs::absolute(opt.data_dir, ec).string();
    if (root.empty()) root = opt.data_dir;
    const bool plain = std::all_of(root.begin(), root.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
             std::string_view("/._-+~").find(c) != std::string_view::npos;
    });
    env = plain ? "HKT_DATA=" + root + " " : "HKT_DATA='" + root + "' ";
  }
  const std::string set = task == "cifar10-rgb" ? "cifar10" : task;  // hkt-data's name of the data set
  throw Error(str_cat("load_task: no ", task, " data in '", folder, "'; fetch it with `", env, "tools/hkt-data ", set,
                      "` (run in the hkt repository; docs/tasks.md, \"Data sets\")"));
}

}  // namespace

std::string default_data_dir() {
  if (const char* d = std::getenv("HKT_DATA"); d && *d) return d;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/hkt/data";
}

const std::vector<std::string>& task_names() {
  static const std::vector<std::string> names = {"synthetic", "listops",       "listops-tsv", "cifar10",
                                                 "cifar10-rgb", "fashion-mnist", "imdb",        "text",
                                                 "tokens",    "series"};
  return names;
}

void check_task_name(const std::string& name, const std::string& who) {
  const auto& names = task_names();
  if (std::find(names.begin(), names.end(), name) != names.end()) return;
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  throw Error(str_cat(who, "unknown task '", name, "'", did_you_mean(name, names), " (known: ", known, ")"));
}

Splits make_synthetic(int64_t train_size, int64_t val_size, int64_t test_size, int64_t seq_len, uint64_t seed) {
  HKT_CHECK(train_size > 0 && val_size > 0 && test_size > 0 && seq_len >= 2, "make_synthetic: needs positive sizes "
            "and seq_len >= 2, got ", train_size, "/", val_size, "/", test_size, ", seq_len ", seq_len);
  constexpr int64_t C = 4;
  Splits s;
  Dataset* parts[3] = {&s.train, &s.val, &s.test};
  const int64_t sizes[3] = {train_size, val_size, test_size};
  const char* names[3] = {"synthetic/train", "synthetic/val", "synthetic/test"};
  for (int p = 0; p < 3; ++p) {
    Dataset& d = *parts[p];
    d.name = names[p];
    d.seq_len = seq_len;
    d.vocab = C + 1;
    d.classes = C;
    d.pad_id = 0;
    for (int64_t i = 0; i < sizes[p]; ++i) {
      // One Philox stream per (split, example): counter = (i, split * 2^32 + draw).
      uint64_t draw = 0;
      auto next = [&]() {
        const auto r = philox4x32(static_cast<uint64_t>(i), (static_cast<uint64_t>(p) << 32) | draw++, seed);
        return r[0];
      };
      const int64_t lo = seq_len / 2;
      const int64_t len = lo + static_cast<int64_t>(next() % static_cast<uint32_t>(seq_len - lo + 1));
      std::vector<int64_t> ids(static_cast<size_t>(len));
      int64_t count[C] = {0, 0, 0, 0};
      for (auto& t : ids) {
        t = 1 + static_cast<int64_t>(next() % C);
        ++count[t - 1];
      }
      int64_t best = 0;
      for (int64_t c = 1; c < C; ++c)
        if (count[c] > count[best]) best = c;
      d.add_tokens(ids, best);
    }
  }
  return s;
}

Splits load_task(const std::string& name, const TaskOptions& opt) {
  HKT_CHECK(name == "listops" || (opt.min_len == 0 && opt.max_len == 0), "load_task: the length window (min_len ",
            opt.min_len, ", max_len ", opt.max_len, ") applies to the generated 'listops' task only, not '", name,
            "'");
  Splits s;
  if (name == "synthetic") {
    s = make_synthetic(or_default(opt.train_size, 1024), or_default(opt.val_size, 256),
                       or_default(opt.test_size, 256), or_default(opt.seq_len, 32), opt.seed);
  } else if (name == "listops" || name == "listops-tsv") {
    if (name == "listops") {
      ListOpsOptions lo;
      if (opt.train_size > 0) lo.train_size = opt.train_size;
      if (opt.val_size > 0) lo.val_size = opt.val_size;
      if (opt.test_size > 0) lo.test_size = opt.test_size;
      if (opt.seq_len > 0) lo.seq_len = opt.seq_len;
      if (opt.max_depth > 0) lo.max_depth = opt.max_depth;
      if (opt.max_args > 0) lo.max_args = opt.max_args;
      lo.min_len = opt.min_len;
      lo.max_len = opt.max_len;
      lo.seed = opt.seed;
      s = make_listops(lo);
    } else {
      const std::string dir = data_folder(opt, "listops");
      require_data(name, opt, dir, {"basic_train.tsv"});
      s = load_listops_tsv(dir, or_default(opt.seq_len, 2000));
      // --train-size: a seeded subset of the training file, as for the other file tasks.
      if (opt.train_size > 0) s.train = sample(s.train, opt.train_size, opt.seed);
    }
  } else if (name == "cifar10" || name == "cifar10-rgb" || name == "fashion-mnist") {
    const int64_t val = or_default(opt.val_size, 5000);
    if (name == "fashion-mnist") {
      const std::string dir = fashion_folder(opt);
      require_data(name, opt, dir, {"train-images-idx3-ubyte.gz", "train-images-idx3-ubyte"});
      s = load_fashion_mnist(dir, val, opt.seed, opt.train_size);
    } else {
      const std::string dir = data_folder(opt, "cifar-10-batches-bin");
      require_data(name, opt, dir, {"data_batch_1.bin", "test_batch.bin"});
      s = load_cifar10(dir, name == "cifar10" ? ImageEncoding::GrayTokens : ImageEncoding::RGB, val, opt.seed,
                       opt.train_size);
    }
  } else if (name == "imdb") {
    const std::string dir = data_folder(opt, "aclImdb");
    require_data(name, opt, dir, {"train", "test"});
    s = load_imdb(dir, or_default(opt.seq_len, 1024), or_default(opt.val_size, 2500), opt.seed, opt.train_size);
  } else if (name == "text") {
    s = load_text(opt.text, opt.seq_len, opt.train_size, opt.val_size, opt.test_size, opt.seed);
  } else if (name == "tokens" || name == "series") {
    s = load_arrays(name, opt.arrays, opt.seq_len, opt.train_size, opt.val_size, opt.test_size, opt.seed);
  } else {
    check_task_name(name, "load_task: ");
    throw Error(str_cat("load_task: task '", name, "' has no loader"));  // a name added to task_names() only
  }
  HKT_CHECK(name == "text" || !opt.text.set(), "load_task: text files (data.text) apply to the 'text' task only, not '",
            name, "'");
  HKT_CHECK(name == "tokens" || name == "series" || !opt.arrays.set(),
            "load_task: array files (data.arrays) apply to the 'tokens' and 'series' tasks only, not '", name, "'");
  // File tasks: --test-size evaluates on a seeded subset of the test split (the user's-data tasks carve it).
  if (opt.test_size > 0 && name != "synthetic" && name != "listops" && name != "text" && name != "tokens" &&
      name != "series")
    s.test = sample(s.test, opt.test_size, opt.seed);
  s.train.validate();
  s.val.validate();
  s.test.validate();
  return s;
}

void fill_model_config(nn::ClassifierConfig& cfg, const Dataset& data) {
  if (data.vocab > 0) {
    cfg.vocab = data.vocab;
    cfg.input_features = 0;
  } else {
    cfg.vocab = 0;
    cfg.input_features = data.features;
  }
  cfg.classes = data.classes;
  cfg.max_len = data.seq_len;
}

}  // namespace hkt::tasks
