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
  if (!slow_gpus.empty()) out.push_back("slow_gpus");
  if (has_thermal) out.push_back("thermal");
  if (!jitter.empty() || !jitter_by_op.empty()) out.push_back("network_jitter");
  if (!transfer_jitter.empty()) out.push_back("transfer_jitter");
  if (!regimes.empty()) out.push_back("network_regimes");
  if (has_wan_rtt) out.push_back("wan_rtt");
  if (levels.run) out.push_back("run");
  if (levels.step) out.push_back("step");
  if (levels.node_step) out.push_back("node_step");
  if (levels.gpu_step) out.push_back("gpu_step");
  if (levels.microbatch) out.push_back("microbatch");
  if (levels.forward_pass || levels.backward_pass) out.push_back("pass");
  if (host.launch_gap_s) out.push_back("launch_gaps");
  if (host.step_s) out.push_back("host_step");
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
  } else if (source == "slow_gpus") {
    v.slow_gpus.clear();
  } else if (source == "network_jitter") {
    v.jitter.clear();
    v.jitter_by_op.clear();
  } else if (source == "transfer_jitter") {
    v.transfer_jitter.clear();
  } else if (source == "network_regimes") {
    v.regimes.clear();
  } else if (source == "wan_rtt") {
    v.has_wan_rtt = false;
  } else if (source == "run") {
    v.levels.run.reset();
  } else if (source == "step") {
    v.levels.step.reset();
  } else if (source == "node_step") {
    v.levels.node_step.reset();
  } else if (source == "gpu_step") {
    v.levels.gpu_step.reset();
  } else if (source == "microbatch") {
    v.levels.microbatch.reset();
  } else if (source == "pass") {
    v.levels.forward_pass.reset();
    v.levels.backward_pass.reset();
  } else if (source == "launch_gaps") {
    v.host.launch_gap_s.reset();
  } else if (source == "host_step") {
    v.host.step_s.reset();
  } else {
    throw std::invalid_argument("unknown source of variation '" + source + "'");
  }
  return v;
}

}  // namespace prismsim
