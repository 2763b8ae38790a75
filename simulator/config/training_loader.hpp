#pragma once

#include "config/config_tree.hpp"
#include "config/training_spec.hpp"
#include "core/diagnostics.hpp"

namespace prismsim {

struct Scenario;

/// Replaces `resilience: FILE` and `resilience.failures: FILE` by the files' trees (paths
/// relative to the file naming them).
void resolve_training_includes(ConfigNode& root, Diagnostics& diags);

/// Reads `simulation.train` (docs/training.md); problems go to `diags`.
TrainLengthSpec read_train_length(const ConfigNode& node, const std::string& path,
                                  Diagnostics& diags);

/// Reads the scenario's `resilience:` map (docs/training.md); problems go to `diags`. A null
/// value means none.
ResilienceSpec read_resilience(const ConfigNode& node, Diagnostics& diags);

/// Rules of the whole-run model that need the rest of the scenario: tokens need a transformer,
/// spares must fit in the platform beside the job, elastic sizes must be smaller than the job
/// and made of whole nodes, a resilience section needs a run length. Turns a length in tokens
/// into steps.
void check_training(Scenario& scenario, Diagnostics& diags);

}  // namespace prismsim
