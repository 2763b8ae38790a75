// The Kineto (PyTorch profiler) trace reader and its JSON scanner; the input's length picks the
// signature options, so that shapes, streams and template stripping are read too.
#include "fuzz_support.hpp"
#include "sample_readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace prismsim;
  const auto& dir = fuzz::fresh_scratch_dir();
  const std::string path =
      fuzz::write_input(dir, "rank0.pt.trace.json", {reinterpret_cast<const char*>(data), size});
  SignatureOptions options;
  options.by_shape = size % 2 == 1;
  options.by_stream = size % 4 >= 2;
  options.strip_templates = size % 8 >= 4;
  SampleSet set(options);
  // (A file without GPU kernels is refused as a whole.)
  if (fuzz::accepted([&] { read_kineto_trace(path, set); }, true)) set.match_calls();
  return 0;
}
