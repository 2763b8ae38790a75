#pragma once

#include <string>
#include <vector>

#include "core/json.hpp"
#include "training/training_model.hpp"
#include "training/training_summary.hpp"

namespace prismsim {

/// A whole-run study (simulation.train): its plan, every replication and their summary.
struct TrainingReport {
  TrainingPlan plan;
  std::vector<ReplicationOutcome> outcomes;
  TrainingSummary summary;
};

/// Writes the value of summary.json's `training` key (docs/training.md, "Outputs").
void write_training_json(JsonWriter& j, const TrainingReport& report);

/// training.csv: one row per replication (docs/training.md, "Outputs").
std::string training_csv(const TrainingReport& report);

/// The terminal's lines about the whole run.
std::string training_text(const TrainingReport& report);

/// A duration for humans: seconds, minutes, hours or days by magnitude ("3.09 h", "54.2 d").
std::string human_duration(double seconds);

/// The columns a sweep adds for a whole-run study, in order (docs/training.md).
const std::vector<std::string>& training_sweep_columns();
/// The cells of those columns for one point (full precision).
std::vector<std::string> training_sweep_cells(const TrainingReport& report);

}  // namespace prismsim
