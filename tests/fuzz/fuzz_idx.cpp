// libFuzzer target for the IDX readers (read_idx_images, read_idx_labels and
// load_fashion_mnist), plain and gzipped. The first byte picks the mode, the
// next two where the bytes are split into an image file and a label file.
// Mode bit 0: gzip both files here first (so the fuzzer reaches the IDX
// parser behind a valid gzip stream; raw input starting 1f 8b exercises
// corrupt gzip streams); bit 1: give them ".gz" names.
// Every input must load or throw hkt::Error; anything else is a bug.
#include <zlib.h>

#include <string>

#include "fuzz_util.hpp"
#include "hkt/core/error.hpp"
#include "hkt/tasks/images.hpp"

namespace {

std::string gzip(std::string_view raw) {
  z_stream z{};
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::string out(deflateBound(&z, raw.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  z.avail_in = static_cast<uInt>(raw.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hkt_fuzz::Input in(data, size);
  const uint8_t mode = in.byte();
  const size_t split = in.u16();
  std::string images(in.take(split)), labels(in.rest());
  if (mode & 1) {
    images = gzip(images);
    labels = gzip(labels);
  }
  const std::string ext = (mode & 2) ? ".gz" : "";
  const auto dir = hkt_fuzz::fresh_dir();
  const auto im_path = dir / ("train-images-idx3-ubyte" + ext), lab_path = dir / ("train-labels-idx1-ubyte" + ext);
  hkt_fuzz::write_file(im_path, images);
  hkt_fuzz::write_file(lab_path, labels);
  try {
    hkt::tasks::read_idx_images(im_path.string());
  } catch (const hkt::Error&) {
  }
  try {
    hkt::tasks::read_idx_labels(lab_path.string());
  } catch (const hkt::Error&) {
  }
  // The whole loader, with the same files as the test split.
  std::filesystem::copy_file(im_path, dir / ("t10k-images-idx3-ubyte" + ext));
  std::filesystem::copy_file(lab_path, dir / ("t10k-labels-idx1-ubyte" + ext));
  try {
    const hkt::tasks::Splits s = hkt::tasks::load_fashion_mnist(dir.string(), (mode >> 2) & 3, 1, (mode >> 4) & 3);
    if (s.train.size() > 0) s.train.batch({0});
  } catch (const hkt::Error&) {
  }
  return 0;
}
