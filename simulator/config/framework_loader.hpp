#pragma once

#include "config/framework.hpp"
#include "config/map_reader.hpp"

namespace prismsim {

/// Reads the framework-dependent mechanics of the parallelism map `p` (whose framework, layout
/// and data-parallel mode `s` already holds) into `s.parallelism`: the framework's defaults for
/// keys not written, errors for settings the framework does not have.
void read_framework_mechanics(MapReader& p, Scenario& s);

/// Reads the optional `host:` map of the scenario reader `r`, defaulting to the framework's
/// fitted host costs.
void read_host(MapReader& r, Scenario& s);

}  // namespace prismsim
