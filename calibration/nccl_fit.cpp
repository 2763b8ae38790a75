#include "nccl_fit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

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

}  // namespace

std::vector<FitKnob> collective_knobs(PlatformSpec& platform) {
  // Fixed starting values, whatever the platform file holds (it may hold an earlier fit), so that
  // the same logs always give the same fit.
  auto& protocols = platform.collectives.protocols;
  protocols = {{"LL", 0.4, 3e-6, 1e-6, true},
               {"LL128", 0.8, 10e-6, 1e-6, true},
               {"Simple", 1.0, 30e-6, 1e-6, false}};
  platform.nvlink.efficiency = 0.8;
  platform.nvlink.latency_s = 1e-6;
  platform.nic.efficiency = 0.8;
  platform.nic.latency_s = 2e-6;
  platform.collectives.launch_latency_s = 4e-6;
  platform.collectives.local_copy_efficiency = 0.8;
  std::vector<FitKnob> knobs = {
      {true, [](PlatformSpec& p) { return &p.nvlink.efficiency; }},
      {false, [](PlatformSpec& p) { return &p.nvlink.latency_s; }},
      {true, [](PlatformSpec& p) { return &p.nic.efficiency; }},
      {false, [](PlatformSpec& p) { return &p.nic.latency_s; }},
      {false, [](PlatformSpec& p) { return &p.collectives.launch_latency_s; }},
      {true, [](PlatformSpec& p) { return &p.collectives.local_copy_efficiency; }},
  };
  // Per protocol: efficiency (but Simple's, the reference), base and step latency.
  for (size_t i = 0; i < protocols.size(); ++i) {
    auto protocol = [i](PlatformSpec& p) -> ProtocolSpec& { return p.collectives.protocols[i]; };
    if (protocols[i].name != "Simple") {
      knobs.push_back({true, [=](PlatformSpec& p) { return &protocol(p).bandwidth_efficiency; }});
    }
    knobs.push_back({false, [=](PlatformSpec& p) { return &protocol(p).base_latency_s; }});
    knobs.push_back({false, [=](PlatformSpec& p) { return &protocol(p).step_latency_s; }});
  }
  return knobs;
}

std::vector<double> predict_log(const PlatformSpec& platform, CollectiveOp op, const NcclLog& log) {
  PlatformSpec sized = platform;
  const int nodes = (log.ranks + platform.gpus_per_node - 1) / platform.gpus_per_node;
  sized.datacenters = {{"fit", nodes}};
  sized.wan.clear();
  const Topology topology(sized);
  std::vector<int> gpus(static_cast<size_t>(log.ranks));
  std::iota(gpus.begin(), gpus.end(), 0);
  const CollectivePlanner planner(layout_of(gpus, topology), sized.collective_channels(),
                                  sized.collective_p2p_channels());
  std::vector<double> predicted;
  for (const auto& point : log.points) {
    predicted.push_back(choose_collective(planner, gpus, topology, sized, op, point.bytes,
                                          Algorithm::automatic).seconds);
  }
  return predicted;
}

PlatformSpec fit_collectives(PlatformSpec platform, CollectiveOp op,
                             const std::vector<NcclLog>& logs) {
  const auto knobs = collective_knobs(platform);
  auto apply = [&](PlatformSpec& p, const std::vector<double>& x) {
    for (size_t i = 0; i < knobs.size(); ++i) *knobs[i].field(p) = from_free(knobs[i], x[i]);
  };
  auto objective = [&](const std::vector<double>& x) {
    PlatformSpec p = platform;
    apply(p, x);
    double total = 0;
    for (const auto& log : logs) {
      const auto predicted = predict_log(p, op, log);
      double sum = 0;
      for (size_t i = 0; i < predicted.size(); ++i) {
        // In units of the size's accuracy target. The sixth power, not the square: the targets
        // bound the worst error of every log, and a mean of squares lets a few sizes far out
        // buy many small gains elsewhere.
        const double e =
            std::log(predicted[i] / log.points[i].time_s) / nccl_tolerance(log.points[i].bytes);
        const double e2 = e * e;
        sum += e2 * e2 * e2;
      }
      total += sum / static_cast<double>(predicted.size());
    }
    return total / static_cast<double>(logs.size());
  };
  // Several starting points for the protocols (their regimes overlap, and a simplex started in
  // one basin rarely leaves it); the best is refined further.
  std::vector<double> best;
  double best_value = std::numeric_limits<double>::infinity();
  for (double ll_efficiency : {0.05, 0.3}) {
    for (double ll128_efficiency : {0.2, 0.6}) {
      for (double ll128_base : {5e-6, 20e-6}) {
        for (double simple_base : {20e-6, 50e-6}) {
          PlatformSpec start = platform;
          start.collectives.protocols[0].bandwidth_efficiency = ll_efficiency;
          start.collectives.protocols[1].bandwidth_efficiency = ll128_efficiency;
          start.collectives.protocols[1].base_latency_s = ll128_base;
          start.collectives.protocols[2].base_latency_s = simple_base;
          std::vector<double> x;
          for (const auto& knob : knobs) x.push_back(to_free(knob, *knob.field(start)));
          for (int round = 0; round < 2; ++round) x = nelder_mead(objective, x, 0.5, 2000, 1e-10);
          const double value = objective(x);
          if (value < best_value) {
            best_value = value;
            best = x;
          }
        }
      }
    }
  }
  std::vector<double> x = best;
  for (int round = 0; round < 4; ++round) x = nelder_mead(objective, x, 0.3, 3000, 1e-12);
  apply(platform, x);
  return platform;
}

}  // namespace prismsim
