// The CSV sample reader of `prismsim calibrate` (name,duration_us[,gpu][,node][,step]).
#include "fuzz_support.hpp"
#include "sample_readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace prismsim;
  const auto& dir = fuzz::fresh_scratch_dir();
  const std::string path =
      fuzz::write_input(dir, "samples.csv", {reinterpret_cast<const char*>(data), size});
  SampleSet set{SignatureOptions{}};
  if (fuzz::accepted([&] { read_samples_csv(path, set); })) set.match_calls();
  return 0;
}
