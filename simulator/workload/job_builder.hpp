#pragma once

#include "config/scenario.hpp"
#include "platform/topology.hpp"
#include "workload/program.hpp"

namespace prismsim {

/// The job of a scenario's workload, whatever its kind.
Job build_job(const Scenario& scenario, const Topology& topology);

}  // namespace prismsim
