#pragma once

#include <string>

#include "variability_calibration.hpp"

namespace prismsim {

/// A distribution in the scenario YAML syntax (a flow map, or a number for a constant); an
/// empirical distribution (or a mixture's empirical component) names `empirical_file`, relative
/// to the section, when given, else lists its samples.
std::string distribution_yaml(const DistributionSpec& d, const std::string& empirical_file = "");

/// Writes the fitted `variability:` section to `path` (and an `<stem>.<entry>.txt` file next to
/// it for each empirical pool, `<stem>.<entry>.tail.txt` for each measured heavy tail), with the
/// provenance in comments: inputs, sample counts, fits.
/// `command` is the command line that produced it. Throws std::runtime_error if it cannot write.
void write_variability_section(const Calibration& c, const SampleSet& set, const std::string& path,
                               const std::string& command);

/// The terminal report: inputs, section entries with their fits, spatial variation and
/// outliers, every signature (fitted or skipped, and why).
std::string calibration_report(const Calibration& c, const SampleSet& set);

/// The same as JSON, with each fit's quantile tables (sample and fitted families) for CDF and QQ
/// plots (`scripts/plot.py calibration`).
std::string calibration_json(const Calibration& c, const SampleSet& set);

}  // namespace prismsim
