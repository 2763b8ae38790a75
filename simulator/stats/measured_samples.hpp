#pragma once

#include <string>
#include <vector>

namespace prismsim {

/// Reads measured step times in seconds: one number per line, or a CSV whose header names a
/// `step_time_s` column (else its last column is read). Blank lines and lines starting with '#'
/// are skipped. Throws InputError ("file:line:col: error: ...") on anything else, or when the file
/// holds no value.
std::vector<double> read_measured_samples(const std::string& path);

}  // namespace prismsim
