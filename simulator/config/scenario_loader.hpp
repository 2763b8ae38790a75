#pragma once

#include <string>
#include <vector>

#include "config/scenario.hpp"

namespace prismsim {

/// Reads a scenario file, resolves the platform and workload files it names (paths relative to
/// it), applies "--set PATH=VALUE" overrides, and validates everything.
/// Throws InputError with every problem found, each located as file:line:col.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});

/// Reads and validates a platform file on its own; overrides address it as "platform.PATH".
PlatformSpec load_platform(const std::string& path, const std::vector<std::string>& overrides = {});

}  // namespace prismsim
