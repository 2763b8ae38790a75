#pragma once

#include <vector>

#include "config/scenario.hpp"

namespace prismsim {

/// Maps ranks to GPUs: rank r runs on GPU r, filling nodes in order and datacenters in the order
/// the platform lists them. Requires the platform to hold the scenario's GPUs (validated).
std::vector<int> place_ranks(const ParallelismSpec& parallelism, const PlatformSpec& platform);

}  // namespace prismsim
