// Benchmark: the whole-run model alone, given a step-time distribution (issue 18's speed target:
// a 16,384-GPU, 1,000,000-step run, 1,000 replications, at most 60 s on 2 cores).
// The scenario gives the failures, recovery and checkpoints (default: the bundled 54-day 405B
// scenario); its length is replaced by STEPS steps and REPLICATIONS replications. Step times
// come from a prismsim runs.csv (--runs-csv) or, by default, from 40 synthetic runs of 20 steps:
// a lognormal persistent factor per run (sigma 0.02) times per-step lognormal noise (sigma 0.03)
// around 10.67 s, the simulated 405B step. Prints the wall time of the replications (the loading
// excluded) and the summary's main figures.
// usage: prismsim-bench-training [SCENARIO.yaml] [--steps N] [--replications R] [--jobs J]
//                                [--runs-csv FILE] [--set PATH=VALUE]...

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "config/scenario_loader.hpp"
#include "core/diagnostics.hpp"
#include "core/seeds.hpp"
#include "core/text.hpp"
#include "training/training_plan.hpp"
#include "training/training_summary.hpp"

namespace {

using namespace prismsim;

/// Runs of a runs.csv (run,seed,step,step_time_s), in run order.
std::vector<std::vector<double>> read_runs_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::map<int, std::vector<double>> runs;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    const auto fields = split_fields(line, ',');
    if (fields.size() < 4) continue;
    const auto run = parse_number(fields[0]);
    const auto step = parse_number(fields[3]);
    if (!run || !step) throw std::runtime_error("bad line in " + path + ": " + line);
    runs[static_cast<int>(*run)].push_back(*step);
  }
  std::vector<std::vector<double>> out;
  for (auto& [run, steps] : runs) out.push_back(std::move(steps));
  return out;
}

/// exp(sigma Z) for a standard normal Z made from two words (Box-Muller).
double lognormal(uint64_t a, uint64_t b, double sigma) {
  const double u = (static_cast<double>(a >> 11) + 1) * 0x1p-53;
  const double v = static_cast<double>(b >> 11) * 0x1p-53;
  return std::exp(sigma * std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v));
}

std::vector<std::vector<double>> synthetic_runs() {
  std::vector<std::vector<double>> runs(40);
  for (uint64_t r = 0; r < runs.size(); ++r) {
    const double factor = lognormal(splitmix64(2 * r), splitmix64(2 * r + 1), 0.02);
    for (uint64_t s = 0; s < 20; ++s) {
      const uint64_t k = 1000 + 40 * r + 2 * s;
      runs[r].push_back(10.67 * factor * lognormal(splitmix64(k), splitmix64(k + 1), 0.03));
    }
  }
  return runs;
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario_path =
      std::string(PRISMSIM_SOURCE_DIR) + "/workloads/scenarios/llama3-405b-h100-training.yaml";
  std::string runs_csv;
  int64_t steps = 1'000'000;
  int replications = 1000;
  int jobs = 2;
  std::vector<std::string> overrides;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--steps" && has_value) {
      steps = std::stoll(argv[++i]);
    } else if (arg == "--replications" && has_value) {
      replications = std::stoi(argv[++i]);
    } else if (arg == "--jobs" && has_value) {
      jobs = std::stoi(argv[++i]);
    } else if (arg == "--runs-csv" && has_value) {
      runs_csv = argv[++i];
    } else if (arg == "--set" && has_value) {
      overrides.emplace_back(argv[++i]);
    } else if (!arg.starts_with("--")) {
      scenario_path = arg;
    } else {
      std::fprintf(stderr,
                   "usage: %s [SCENARIO.yaml] [--steps N] [--replications R] [--jobs J] "
                   "[--runs-csv FILE] [--set PATH=VALUE]...\n",
                   argv[0]);
      return 2;
    }
  }
  try {
    overrides.push_back(
        fmt::format("simulation.train={{steps: {}, replications: {}}}", steps, replications));
    const Scenario scenario = load_scenario(scenario_path, overrides);
    if (!scenario.resilience.elastic_replicas.empty()) {
      std::fprintf(stderr,
                   "prismsim-bench-training: elastic sizes need their own step times; "
                   "remove resilience.recovery.elastic\n");
      return 2;
    }
    const auto runs = runs_csv.empty() ? synthetic_runs() : read_runs_csv(runs_csv);
    const TrainingPlan plan = training_plan(scenario, {StepTimeSet{scenario.parallelism.dp, runs}});
    const auto start = std::chrono::steady_clock::now();
    const auto outcomes = simulate_training(plan, jobs);
    const TrainingSummary s = summarize_training(plan, outcomes);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "%d replications of %lld steps on %d GPUs, %zu runs of step times, jobs %d: "
        "%.3f s (summary included)\n",
        replications, static_cast<long long>(steps), scenario.parallelism.ranks(), runs.size(),
        jobs, seconds);
    std::printf(
        "training time p50 %.4g d, p99 %.4g d; goodput mean %.4f; interruptions mean "
        "%.1f; finished %d\n",
        s.wall_s.p50 / 86400, s.wall_s.p99 / 86400, s.goodput.mean, s.interruptions.mean,
        s.finished);
  } catch (const InputError& e) {
    for (const auto& d : e.diagnostics()) std::fprintf(stderr, "%s\n", d.str().c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prismsim-bench-training: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
