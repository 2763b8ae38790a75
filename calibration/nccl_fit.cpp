#include "nccl_fit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <utility>

#include "collectives/cost_model.hpp"
#include "collectives/plan.hpp"
#include "nelder_mead.hpp"
#include "platform/topology.hpp"

namespace prismsim {
namespace {

// The optimiser works on unbounded values: fractions through a logistic, latencies through a
// logistic of log10(seconds) between 1 ns and 1 ms.
constexpr double kMinLog10 = -9, kMaxLog10 = -3;

double logit(double u) {
  u = std::clamp(u, 1e-9, 1.0 - 1e-9);
  return std::log(u / (1.0 - u));
}
double logistic(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double to_free(const FitKnob& knob, double value) {
  if (knob.fraction) return logit(value);
  const double log10 = std::log10(std::max(value, 1e-12));
  return logit((log10 - kMinLog10) / (kMaxLog10 - kMinLog10));
}

double from_free(const FitKnob& knob, double x) {
  if (knob.fraction) return logistic(x);
  return std::pow(10.0, kMinLog10 + (kMaxLog10 - kMinLog10) * logistic(x));
}

/// What a knob needs in the data to be determined.
enum class Needs { always, multi_gpu, multi_node, one_gpu, nvls };

struct KnobDef {
  FitKnob knob;
  Needs needs;
};

/// The fit's protocols, in order, with their starting values.
const std::vector<ProtocolSpec>& fit_protocols() {
  static const std::vector<ProtocolSpec> protocols = {{"LL", 0.4, 3e-6, 1e-6, true},
                                                      {"LL128", 0.8, 10e-6, 1e-6, true},
                                                      {"Simple", 1.0, 30e-6, 1e-6, false}};
  return protocols;
}

std::vector<KnobDef> all_knobs() {
  std::vector<KnobDef> knobs = {
      {{"node.nvlink.efficiency", true, 0.8, [](PlatformSpec& p) { return &p.nvlink.efficiency; }},
       Needs::multi_gpu},
      {{"node.nvlink.latency", false, 1e-6, [](PlatformSpec& p) { return &p.nvlink.latency_s; }},
       Needs::multi_gpu},
      {{"node.nic.efficiency", true, 0.8, [](PlatformSpec& p) { return &p.nic.efficiency; }},
       Needs::multi_node},
      {{"node.nic.latency", false, 2e-6, [](PlatformSpec& p) { return &p.nic.latency_s; }},
       Needs::multi_node},
      {{"collectives.launch_latency", false, 4e-6,
        [](PlatformSpec& p) { return &p.collectives.launch_latency_s; }},
       Needs::always},
      {{"collectives.local_copy_efficiency", true, 0.8,
        [](PlatformSpec& p) { return &p.collectives.local_copy_efficiency; }},
       Needs::one_gpu},
      {{"collectives.nvls.efficiency", true, 0.7,
        [](PlatformSpec& p) { return &p.collectives.nvls_efficiency; }},
       Needs::nvls},
      {{"collectives.nvls.latency", false, 20e-6,
        [](PlatformSpec& p) { return &p.collectives.nvls.base_latency_s; }},
       Needs::nvls},
  };
  // Per protocol: efficiency (but Simple's, the reference), base and step latency.
  const auto& protocols = fit_protocols();
  for (size_t i = 0; i < protocols.size(); ++i) {
    auto protocol = [i](PlatformSpec& p) -> ProtocolSpec& { return p.collectives.protocols[i]; };
    const std::string prefix = "collectives.protocols." + protocols[i].name + ".";
    if (protocols[i].name != "Simple") {
      knobs.push_back({{prefix + "bandwidth_efficiency", true, protocols[i].bandwidth_efficiency,
                        [=](PlatformSpec& p) { return &protocol(p).bandwidth_efficiency; }},
                       Needs::multi_gpu});
    }
    knobs.push_back({{prefix + "base_latency", false, protocols[i].base_latency_s,
                      [=](PlatformSpec& p) { return &protocol(p).base_latency_s; }},
                     Needs::multi_gpu});
    knobs.push_back({{prefix + "step_latency", false, protocols[i].step_latency_s,
                      [=](PlatformSpec& p) { return &protocol(p).step_latency_s; }},
                     Needs::multi_gpu});
  }
  return knobs;
}

bool determined(Needs needs, const PlatformSpec& platform, const std::vector<NcclLog>& logs) {
  for (const NcclLog& log : logs) {
    const bool multi_node = log.ranks > platform.gpus_per_node;
    switch (needs) {
      case Needs::always:
        return true;
      case Needs::multi_gpu:
        if (log.ranks > 1 && log.algorithm != Algorithm::nvls &&
            log.algorithm != Algorithm::nvls_tree) {
          return true;
        }
        break;
      case Needs::multi_node:
        if (multi_node) return true;
        break;
      case Needs::one_gpu:
        if (log.ranks == 1) return true;
        break;
      case Needs::nvls:
        if (platform.nvls && log.ranks > 1 && log.op == CollectiveOp::all_reduce &&
            (log.algorithm == Algorithm::automatic || log.algorithm == Algorithm::nvls ||
             log.algorithm == Algorithm::nvls_tree)) {
          return true;
        }
        break;
    }
  }
  return false;
}

/// Objective of a fit: the mean over logs of the mean sixth power of the log error of each size's
/// time in units of its tolerance.
double fit_objective(const PlatformSpec& p, const std::vector<NcclLog>& logs,
                     std::vector<LogPredictor>& predictors) {
  double total = 0;
  for (size_t l = 0; l < logs.size(); ++l) {
    const NcclLog& log = logs[l];
    const auto predicted = predictors[l].predict(p);
    double sum = 0;
    for (size_t i = 0; i < predicted.size(); ++i) {
      // The sixth power, not the square: the targets bound the worst error of every log, and a
      // mean of squares lets a few sizes far out buy many small gains elsewhere.
      const double e =
          std::log(predicted[i] / log.points[i].time_s) / nccl_tolerance(log.points[i].bytes);
      const double e2 = e * e;
      sum += e2 * e2 * e2;
    }
    total += sum / static_cast<double>(predicted.size());
  }
  return total / static_cast<double>(logs.size());
}

}  // namespace

std::vector<std::string> collective_knob_names() {
  std::vector<std::string> names;
  for (const auto& def : all_knobs()) names.push_back(def.knob.name);
  return names;
}

PlatformSpec with_fit_protocols(PlatformSpec platform) {
  std::vector<ProtocolSpec> protocols = fit_protocols();
  for (ProtocolSpec& protocol : protocols) {
    for (const ProtocolSpec& given : platform.collectives.protocols) {
      if (given.name == protocol.name) {
        protocol.bandwidth_efficiency = given.bandwidth_efficiency;
        protocol.base_latency_s = given.base_latency_s;
        protocol.step_latency_s = given.step_latency_s;
      }
    }
  }
  platform.collectives.protocols = protocols;
  return platform;
}

std::vector<FitKnob> collective_knobs(const PlatformSpec& platform,
                                      const std::vector<NcclLog>& logs,
                                      const std::vector<std::string>& fixed) {
  std::vector<FitKnob> knobs;
  for (auto& def : all_knobs()) {
    if (std::find(fixed.begin(), fixed.end(), def.knob.name) != fixed.end()) continue;
    if (determined(def.needs, platform, logs)) knobs.push_back(std::move(def.knob));
  }
  return knobs;
}

LogPredictor::LogPredictor(const PlatformSpec& platform, const NcclLog& log)
    : log_(&log),
      sized_(platform),
      gpus_(static_cast<size_t>(log.ranks)),
      planner_(GroupLayout{}, 1, 1) {
  const int nodes = (log.ranks + platform.gpus_per_node - 1) / platform.gpus_per_node;
  sized_.datacenters = {{"fit", nodes}};
  sized_.wan.clear();
  std::iota(gpus_.begin(), gpus_.end(), 0);
  const Topology topology(sized_);
  layout_ = layout_of(gpus_, topology);
  planner_ = planner_for(layout_, sized_);
  algorithm_ =
      log.algorithm != Algorithm::automatic && planner_.supports(log.op, log.algorithm, sized_.nvls)
          ? log.algorithm
          : Algorithm::automatic;
}

std::vector<double> LogPredictor::predict(const PlatformSpec& platform) {
  PlatformSpec sized = platform;
  sized.datacenters = sized_.datacenters;
  sized.wan.clear();
  const Topology topology(sized);
  std::vector<double> predicted;
  for (size_t i = 0; i < log_->points.size(); ++i) {
    const double bytes = log_->points[i].bytes;
    const auto phases_of = [&](Algorithm a) {
      if (a == Algorithm::nvls || a == Algorithm::nvls_tree) {  // bytes depend on NVLS efficiency
        const CollectivePlanner planner = planner_for(layout_, sized);
        const auto plan = planner.plan(log_->op, a, bytes);
        return estimate_phases(*plan, log_->ranks, gpus_, topology);
      }
      auto [it, added] = loads_.try_emplace({i, a});
      if (added) {
        const auto plan = planner_.plan(log_->op, a, bytes);
        it->second = phase_loads(*plan, log_->ranks, gpus_, topology);
      }
      return cost_phases(it->second, topology);
    };
    const CollectiveChoice choice =
        choose_collective(planner_, sized, log_->op, bytes, algorithm_, phases_of);
    predicted.push_back(back_to_back_seconds(
        choice.seconds, back_to_back_period_seconds(choice, sized), log_->iterations));
  }
  return predicted;
}

std::vector<double> predict_log(const PlatformSpec& platform, const NcclLog& log) {
  return LogPredictor(platform, log).predict(platform);
}

PlatformSpec fit_collectives(const PlatformSpec& given, const std::vector<NcclLog>& logs,
                             const std::vector<std::string>& fixed) {
  PlatformSpec platform = with_fit_protocols(given);
  const auto knobs = collective_knobs(platform, logs, fixed);
  // Fixed starting values, whatever the platform file holds (it may hold an earlier fit), so that
  // the same logs always give the same fit.
  for (const auto& knob : knobs) *knob.field(platform) = knob.start;
  auto apply = [&](PlatformSpec& p, const std::vector<double>& x) {
    for (size_t i = 0; i < knobs.size(); ++i) *knobs[i].field(p) = from_free(knobs[i], x[i]);
  };
  std::vector<LogPredictor> predictors;
  for (const auto& log : logs) predictors.emplace_back(platform, log);
  auto objective = [&](const std::vector<double>& x) {
    PlatformSpec p = platform;
    apply(p, x);
    return fit_objective(p, logs, predictors);
  };
  if (knobs.empty()) return platform;
  // Several starting points for the protocols (their regimes overlap, and a simplex started in
  // one basin rarely leaves it); the best is refined further. Only free knobs are varied.
  const auto is_free = [&](const std::string& name) {
    return std::any_of(knobs.begin(), knobs.end(),
                       [&](const FitKnob& k) { return k.name == name; });
  };
  struct Variation {
    std::string knob;
    std::vector<double> values;
  };
  std::vector<Variation> variations;
  for (Variation v :
       std::vector<Variation>{{"collectives.protocols.LL.bandwidth_efficiency", {0.05, 0.3}},
                              {"collectives.protocols.LL128.bandwidth_efficiency", {0.2, 0.6}},
                              {"collectives.protocols.LL128.base_latency", {5e-6, 20e-6}},
                              {"collectives.protocols.Simple.base_latency", {20e-6, 50e-6}},
                              // Fixed costs of tens of microseconds (a host-driven network such as
                              // EFA) sit far from a kernel launch's few.
                              {"collectives.launch_latency", {4e-6, 30e-6}}}) {
    if (is_free(v.knob)) variations.push_back(std::move(v));
  }
  std::vector<double> best;
  double best_value = std::numeric_limits<double>::infinity();
  const size_t starts = size_t{1} << variations.size();
  for (size_t start_index = 0; start_index < starts; ++start_index) {
    PlatformSpec start = platform;
    for (size_t v = 0; v < variations.size(); ++v) {
      const size_t bit = (start_index >> (variations.size() - 1 - v)) & 1;
      for (const auto& knob : knobs) {
        if (knob.name == variations[v].knob) *knob.field(start) = variations[v].values[bit];
      }
    }
    std::vector<double> x;
    for (const auto& knob : knobs) x.push_back(to_free(knob, *knob.field(start)));
    for (int round = 0; round < 2; ++round) x = nelder_mead(objective, x, 0.5, 2000, 1e-10);
    const double value = objective(x);
    if (value < best_value) {
      best_value = value;
      best = x;
    }
  }
  std::vector<double> x = best;
  for (int round = 0; round < 4; ++round) x = nelder_mead(objective, x, 0.3, 3000, 1e-12);
  apply(platform, x);
  return platform;
}

BusbwErrors busbw_errors(const NcclLog& log, const std::vector<double>& predicted) {
  BusbwErrors errors;
  for (size_t i = 0; i < predicted.size() && i < log.points.size(); ++i) {
    const double error = std::fabs(log.points[i].time_s / predicted[i] - 1.0);
    if (log.points[i].bytes >= kLargeMessageBytes) {
      errors.large = std::max(errors.large, error);
      ++errors.large_count;
    } else {
      errors.small = std::max(errors.small, error);
      ++errors.small_count;
    }
  }
  return errors;
}

std::vector<HeldOutGroup> leave_one_group_out(const PlatformSpec& platform,
                                              const std::vector<NcclLog>& logs,
                                              const std::vector<std::string>& groups,
                                              const std::vector<std::string>& fixed) {
  std::vector<std::string> names;  // in order of first appearance
  for (const std::string& g : groups) {
    if (std::find(names.begin(), names.end(), g) == names.end()) names.push_back(g);
  }
  std::vector<HeldOutGroup> folds;
  if (names.size() < 2) return folds;
  // A knob the full data determines but a fold's training data does not (the one-GPU log left
  // out: the local copy) starts from its fixed value, not from the platform's (perhaps a fit that
  // saw the held-out log).
  PlatformSpec blank = with_fit_protocols(platform);
  for (const auto& knob : collective_knobs(blank, logs, fixed)) *knob.field(blank) = knob.start;
  for (const std::string& name : names) {
    HeldOutGroup fold;
    fold.group = name;
    std::vector<NcclLog> training;
    for (size_t i = 0; i < logs.size(); ++i) {
      if (groups[i] == name) {
        fold.logs.push_back(i);
      } else {
        training.push_back(logs[i]);
      }
    }
    fold.fitted = fit_collectives(blank, training, fixed);
    for (size_t i : fold.logs) fold.predicted.push_back(predict_log(fold.fitted, logs[i]));
    folds.push_back(std::move(fold));
  }
  return folds;
}

}  // namespace prismsim
