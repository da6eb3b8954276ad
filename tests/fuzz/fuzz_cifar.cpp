// libFuzzer target for the CIFAR-10 binary reader (load_cifar10). The input's
// first byte picks the encoding, the validation size and the training limit;
// the rest is written as every batch file (data_batch_1..5.bin, test_batch.bin).
// Every input must load or throw hkt::Error; anything else is a bug.
#include "fuzz_util.hpp"
#include "hkt/core/error.hpp"
#include "hkt/tasks/images.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hkt_fuzz::Input in(data, size);
  const uint8_t opt = in.byte();
  const auto enc = (opt & 1) ? hkt::tasks::ImageEncoding::RGB : hkt::tasks::ImageEncoding::GrayTokens;
  const int64_t val_size = (opt >> 1) & 7;   // 0..7
  const int64_t max_train = (opt >> 4) & 7;  // 0 = all
  const std::string_view bytes = in.rest();
  const auto dir = hkt_fuzz::fresh_dir();
  // Sometimes in a cifar-10-batches-bin subfolder, as the tarball extracts.
  const auto batches = (opt & 0x80) ? dir / "cifar-10-batches-bin" : dir;
  std::filesystem::create_directories(batches);
  for (const char* name : {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                           "data_batch_5.bin", "test_batch.bin"})
    hkt_fuzz::write_file(batches / name, bytes);
  try {
    const hkt::tasks::Splits s = hkt::tasks::load_cifar10(dir.string(), enc, val_size, 1, max_train);
    s.train.validate();
    s.test.validate();
    if (s.train.size() > 0) s.train.batch({0});
  } catch (const hkt::Error&) {
  }
  return 0;
}
