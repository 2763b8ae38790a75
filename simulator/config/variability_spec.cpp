#include "config/variability_spec.hpp"

#include <stdexcept>

namespace prismsim {

const char* to_string(CommScope scope) {
  switch (scope) {
    case CommScope::intra_node:
      return "intra_node";
    case CommScope::inter_node:
      return "inter_node";
    case CommScope::cross_datacenter:
      return "cross_datacenter";
  }
  return "?";
}

std::vector<std::string> VariabilitySpec::sources() const {
  std::vector<std::string> out;
  if (has_kernel_default || !kernel_classes.empty() || !kernel_names.empty()) {
    out.push_back("kernels");
  }
  if (has_gpu_speed) out.push_back("gpus");
  if (!slow_nodes.empty() || random_slow_node_probability > 0) out.push_back("slow_nodes");
  if (has_thermal) out.push_back("thermal");
  if (!jitter.empty()) out.push_back("network_jitter");
  if (!transfer_jitter.empty()) out.push_back("transfer_jitter");
  if (!regimes.empty()) out.push_back("network_regimes");
  if (has_wan_rtt) out.push_back("wan_rtt");
  return out;
}

VariabilitySpec VariabilitySpec::without(const std::string& source) const {
  VariabilitySpec v = *this;
  if (source == "kernels") {
    v.has_kernel_default = false;
    v.kernel_classes.clear();
    v.kernel_names.clear();
  } else if (source == "gpus") {
    v.has_gpu_speed = false;
    v.per_gpu = v.per_node = v.per_rack = DistributionSpec::constant_at(1);
  } else if (source == "slow_nodes") {
    v.slow_nodes.clear();
    v.random_slow_node_probability = 0;
  } else if (source == "thermal") {
    v.has_thermal = false;
  } else if (source == "network_jitter") {
    v.jitter.clear();
  } else if (source == "transfer_jitter") {
    v.transfer_jitter.clear();
  } else if (source == "network_regimes") {
    v.regimes.clear();
  } else if (source == "wan_rtt") {
    v.has_wan_rtt = false;
  } else {
    throw std::invalid_argument("unknown source of variation '" + source + "'");
  }
  return v;
}

}  // namespace prismsim
