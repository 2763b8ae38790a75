// The nccl-tests log reader (as `prismsim calibrate` and prismsim-calibrate read logs) and
// vTrain's all-reduce tables, on the same input.
#include "fuzz_support.hpp"
#include "nccl_log.hpp"
#include "sample_readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace prismsim;
  const auto& dir = fuzz::fresh_scratch_dir();
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string log = fuzz::write_input(dir, "all_reduce_perf.log", text);
  SampleSet set{SignatureOptions{}};
  fuzz::accepted([&] { read_nccl_tests_log(log, set); });
  const std::string csv = fuzz::write_input(dir, "allreduce.csv", text);
  fuzz::accepted([&] { read_vtrain_allreduce_csv(csv, 8); });
  return 0;
}
