#include "config/scenario.hpp"

#include <fmt/format.h>

namespace prismsim {

const char* to_string(Precision precision) {
  switch (precision) {
    case Precision::fp32:
      return "fp32";
    case Precision::tf32:
      return "tf32";
    case Precision::bf16:
      return "bf16";
    case Precision::fp16:
      return "fp16";
    case Precision::fp8:
      return "fp8";
    case Precision::fp4:
      return "fp4";
  }
  return "?";
}

double bytes_per_element(Precision precision) {
  switch (precision) {
    case Precision::fp32:
    case Precision::tf32:
      return 4;
    case Precision::bf16:
    case Precision::fp16:
      return 2;
    case Precision::fp8:
      return 1;
    case Precision::fp4:
      return 0.5 + 1.0 / 16;  // an E4M3 scale per 16 values
  }
  return 4;
}

int64_t FabricSpec::down_ports(int tier) const {
  if (tier >= levels) return radix;
  const double ratio = oversubscription.at(static_cast<size_t>(tier - 1));
  return static_cast<int64_t>(static_cast<double>(radix) * ratio / (1.0 + ratio));
}

int64_t FabricSpec::leaf_nics(int gpus_per_node) const {
  const int64_t ports = down_ports(1);
  if (kind == FabricKind::rail_optimized || ports < gpus_per_node) return ports;
  return ports / gpus_per_node * gpus_per_node;
}

int64_t FabricSpec::nics_below(int tier, int gpus_per_node) const {
  int64_t nics = leaf_nics(gpus_per_node);
  for (int t = 2; t <= tier; ++t) nics *= down_ports(t);
  return nics;
}

int PlatformSpec::total_gpus() const {
  int nodes = 0;
  for (const auto& dc : datacenters) nodes += dc.nodes;
  return nodes * gpus_per_node;
}

}  // namespace prismsim

namespace prismsim {

std::vector<std::string> calibration_warnings(const PlatformSpec& platform, bool compute,
                                              bool collectives) {
  std::vector<std::string> lines;
  if (compute && !platform.calibration.compute_calibrated()) {
    lines.push_back(fmt::format(
        "prismsim: warning: platform {}: compute parameters are uncalibrated (gpu.compute and "
        "gpu.efficiency are assumed values; see platform.calibration.compute)",
        platform.name));
  }
  if (collectives && !platform.calibration.collectives_calibrated()) {
    lines.push_back(fmt::format(
        "prismsim: warning: platform {}: collective parameters are uncalibrated (node link "
        "efficiencies and latencies and the collectives section are assumed values; see "
        "platform.calibration.collectives)",
        platform.name));
  }
  return lines;
}

}  // namespace prismsim
