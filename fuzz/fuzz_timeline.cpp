// The op timeline reader of `prismsim calibrate` (rank,step,optype,start_ts,duration,...) and the
// calibration it feeds, with a small bootstrap so that one input stays well under the timeout.
#include "fuzz_support.hpp"
#include "timeline.hpp"
#include "timeline_calibration.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace prismsim;
  const auto& dir = fuzz::fresh_scratch_dir();
  const std::string path =
      fuzz::write_input(dir, "timeline.csv", {reinterpret_cast<const char*>(data), size});
  fuzz::accepted([&] {
    const std::vector<Timeline> timelines{read_timeline_csv(path)};
    TimelineOptions options;
    options.bootstrap_replicates = 5;
    const TimelineCalibration c = calibrate_timelines(timelines, options);
    timeline_report(c);
    timeline_json(c);
  });
  return 0;
}
