#include "workload/job_builder.hpp"

#include "workload/layer_stack.hpp"
#include "workload/transformer_job.hpp"

namespace prismsim {

Job build_job(const Scenario& scenario, const Topology& topology) {
  switch (scenario.workload.kind) {
    case WorkloadKind::layer_stack:
      return build_layer_stack_job(scenario);
    case WorkloadKind::transformer:
      return build_transformer_job(scenario, topology);
  }
  return {};
}

}  // namespace prismsim
