#pragma once

#include <optional>
#include <string>

#include "config/config_tree.hpp"
#include "config/limits.hpp"
#include "config/variability_spec.hpp"
#include "core/diagnostics.hpp"

namespace prismsim {

/// Reads and validates the scenario's `variability:` map (see docs/variability.md); problems go
/// to `diags`. A null value (`variability: null`, `--set variability=null`) means none.
VariabilitySpec read_variability(const ConfigNode& node, Diagnostics& diags);

/// Reads one distribution (a number, or a map with one family: docs/variability.md) at `node`,
/// named `path` in messages; values must be positive when `positive`, else any number (within
/// limits::kPositive or limits::kAnyValue, which keep its draws finite).
DistributionSpec read_distribution_spec(const ConfigNode& node, const std::string& path,
                                        bool positive, Diagnostics& diags);
/// The same, with values (locations) in `values` and spreads at most its upper end.
DistributionSpec read_distribution_spec(const ConfigNode& node, const std::string& path,
                                        const ValueRange& values, Diagnostics& diags);

/// A duration ("10min": a constant) or a distribution of durations in a stated unit
/// (`{unit: min, lognormal: {median: 10, sigma: 0.5}}`), in seconds; nothing (reported) when
/// invalid.
std::optional<DistributionSpec> read_duration_distribution(const ConfigNode& node,
                                                           const std::string& path,
                                                           Diagnostics& diags);

/// Multiplies a distribution's values by `factor` > 0 (unit conversion).
void scale_distribution(DistributionSpec& d, double factor);

}  // namespace prismsim
