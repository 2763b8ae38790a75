#include "timeline_calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <tuple>
#include <unordered_map>

#include "calibration_output.hpp"
#include "core/files.hpp"
#include "core/json.hpp"
#include "stats/distribution.hpp"

namespace prismsim {
namespace {

std::string num(double v) { return fmt::format("{:.6g}", v); }

double mean_of(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

/// Unbiased variance (n - 1); 0 for fewer than two values.
double variance_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size() - 1);
}

/// Quantile `p` of unsorted `v` (0 when empty).
double quantile_of(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, p);
}

/// 1.4826 x the median absolute deviation: a standard deviation robust to outliers.
double robust_sd(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double median = quantile_of(v, 0.5);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - median));
  return 1.4826 * quantile_of(dev, 0.5);
}

/// The decomposition's intermediate results, for the estimates and the effects' shapes.
struct Decomposition {
  VarianceComponents components;
  Estimability estimable;
  std::vector<double> within;           ///< per pass: residual within its GPU x step cell
  std::vector<double> microbatch_mean;  ///< per pass: mean within-cell residual of its microbatch
                                        ///< group (NaN when it has no group across GPUs)
  std::vector<double> group_means;      ///< one per microbatch group spanning GPUs
};

Decomposition decompose(const std::vector<PassSample>& passes) {
  Decomposition d;
  VarianceComponents& vc = d.components;
  const size_t n_pass = passes.size();
  if (n_pass == 0) return d;
  int32_t gpus = 0, steps = 0;
  uint32_t signatures = 0;
  for (const PassSample& p : passes) {
    gpus = std::max(gpus, p.gpu + 1);
    steps = std::max(steps, p.step + 1);
    signatures = std::max(signatures, p.signature + 1);
  }
  // Centre per signature.
  std::vector<double> sig_sum(signatures, 0), sig_n(signatures, 0);
  for (const PassSample& p : passes) {
    sig_sum[p.signature] += p.log_duration;
    sig_n[p.signature] += 1;
  }
  std::vector<double> r(n_pass);
  for (size_t i = 0; i < n_pass; ++i) {
    r[i] = passes[i].log_duration - sig_sum[passes[i].signature] / sig_n[passes[i].signature];
  }
  // Cell (GPU x step), step and GPU means.
  const size_t cells = static_cast<size_t>(gpus) * static_cast<size_t>(steps);
  std::vector<double> cell_sum(cells, 0), cell_n(cells, 0), step_sum(steps, 0), step_n(steps, 0),
      gpu_sum(gpus, 0), gpu_n(gpus, 0);
  double total = 0;
  for (size_t i = 0; i < n_pass; ++i) {
    const PassSample& p = passes[i];
    const size_t c =
        static_cast<size_t>(p.gpu) * static_cast<size_t>(steps) + static_cast<size_t>(p.step);
    cell_sum[c] += r[i];
    cell_n[c] += 1;
    step_sum[static_cast<size_t>(p.step)] += r[i];
    step_n[static_cast<size_t>(p.step)] += 1;
    gpu_sum[static_cast<size_t>(p.gpu)] += r[i];
    gpu_n[static_cast<size_t>(p.gpu)] += 1;
    total += r[i];
  }
  const double grand = total / static_cast<double>(n_pass);
  size_t filled = 0;
  for (double n : cell_n) filled += n > 0 ? 1 : 0;
  const double n_cell = static_cast<double>(n_pass) / static_cast<double>(filled);  // passes a cell
  // Within-cell residuals and microbatch groups (replica x microbatch x step) across GPUs.
  d.within.assign(n_pass, 0);
  for (size_t i = 0; i < n_pass; ++i) {
    const PassSample& p = passes[i];
    const size_t c =
        static_cast<size_t>(p.gpu) * static_cast<size_t>(steps) + static_cast<size_t>(p.step);
    d.within[i] = r[i] - cell_sum[c] / cell_n[c];
  }
  struct Group {
    double sum = 0, sum_sq = 0;
    size_t n = 0;
    std::map<int32_t, std::pair<double, size_t>> by_gpu;  // sum and count per GPU
  };
  std::unordered_map<uint64_t, Group> groups;
  std::vector<uint64_t> key_of(n_pass, ~0ULL);
  std::set<std::pair<int32_t, int32_t>> replica_steps;
  std::vector<std::set<int32_t>> cell_microbatches;  // distinct microbatches per cell
  cell_microbatches.resize(cells);
  for (size_t i = 0; i < n_pass; ++i) {
    const PassSample& p = passes[i];
    if (p.replica < 0 || p.microbatch < 0) continue;
    // Steps, replicas and microbatches are dense and below 2^21 (checked by the caller's sizes).
    const uint64_t key = (static_cast<uint64_t>(p.step) << 42) |
                         (static_cast<uint64_t>(p.replica) << 21) |
                         static_cast<uint64_t>(p.microbatch);
    key_of[i] = key;
    Group& g = groups[key];
    g.sum += d.within[i];
    g.n += 1;
    auto& [s, n] = g.by_gpu[p.gpu];
    s += d.within[i];
    n += 1;
    replica_steps.insert({p.step, p.replica});
    cell_microbatches[static_cast<size_t>(p.gpu) * static_cast<size_t>(steps) +
                      static_cast<size_t>(p.step)]
        .insert(p.microbatch);
  }
  // Covariance of residuals of one microbatch on different GPUs: sum over pairs w_a w_b.
  double cross = 0, pairs = 0;
  for (auto& [key, g] : groups) {
    if (g.by_gpu.size() < 2) continue;
    double all = 0, within_gpu = 0, n_all = 0, n_within = 0;
    for (const auto& [gpu, sn] : g.by_gpu) {
      all += sn.first;
      n_all += static_cast<double>(sn.second);
      within_gpu += sn.first * sn.first;  // includes same-GPU products, taken out below
      n_within += static_cast<double>(sn.second) * static_cast<double>(sn.second);
    }
    // sum over ordered pairs on different GPUs = (sum)^2 - sum_gpu (gpu sum)^2
    cross += all * all - within_gpu;
    pairs += n_all * n_all - n_within;
  }
  double microbatches_per_cell = 0, mb_cells = 0;
  for (const auto& mbs : cell_microbatches) {
    if (mbs.empty()) continue;
    microbatches_per_cell += static_cast<double>(mbs.size());
    mb_cells += 1;
  }
  const double m_per_cell = mb_cells > 0 ? microbatches_per_cell / mb_cells : 0;
  if (pairs > 0 && m_per_cell > 1) {
    d.estimable.microbatch = true;
    vc.microbatch = std::max(0.0, cross / pairs * m_per_cell / (m_per_cell - 1));
  }
  // Per direction: E[w^2] = s2_mb (1 - 1/M) + s2_d (1 - 2/n) + mean(s2) / n.
  double sq[2] = {0, 0}, count[2] = {0, 0};
  for (size_t i = 0; i < n_pass; ++i) {
    const int dir = passes[i].forward ? 0 : 1;
    sq[dir] += d.within[i] * d.within[i];
    count[dir] += 1;
  }
  const double mb_part = d.estimable.microbatch ? vc.microbatch * (1 - 1 / m_per_cell) : 0;
  double w_dir[2] = {0, 0};
  for (int dir = 0; dir < 2; ++dir)
    w_dir[dir] = count[dir] > 0 ? sq[dir] / count[dir] - mb_part : 0;
  double mean_s2 = 0;
  if (n_cell > 2) {
    d.estimable.pass = true;
    mean_s2 =
        (w_dir[0] * count[0] + w_dir[1] * count[1]) / (count[0] + count[1]) / (1 - 1 / n_cell);
    mean_s2 = std::max(0.0, mean_s2);
    vc.forward_pass =
        count[0] > 0 ? std::max(0.0, (w_dir[0] - mean_s2 / n_cell) / (1 - 2 / n_cell)) : 0;
    vc.backward_pass =
        count[1] > 0 ? std::max(0.0, (w_dir[1] - mean_s2 / n_cell) / (1 - 2 / n_cell)) : 0;
  }
  // Noise of a cell mean from within the cell.
  const double v_cell =
      (d.estimable.microbatch && m_per_cell > 0 ? vc.microbatch / m_per_cell : 0) +
      mean_s2 / n_cell;
  std::vector<double> step_mean, gpu_mean;
  for (int32_t t = 0; t < steps; ++t) {
    if (step_n[static_cast<size_t>(t)] > 0)
      step_mean.push_back(step_sum[static_cast<size_t>(t)] / step_n[static_cast<size_t>(t)]);
  }
  for (int32_t g = 0; g < gpus; ++g) {
    if (gpu_n[static_cast<size_t>(g)] > 0)
      gpu_mean.push_back(gpu_sum[static_cast<size_t>(g)] / gpu_n[static_cast<size_t>(g)]);
  }
  const double T = static_cast<double>(step_mean.size()), G = static_cast<double>(gpu_mean.size());
  if (T >= 2 && G >= 2) {
    d.estimable.gpu_step = true;
    double ss = 0, df = 0;
    for (int32_t g = 0; g < gpus; ++g) {
      for (int32_t t = 0; t < steps; ++t) {
        const size_t c =
            static_cast<size_t>(g) * static_cast<size_t>(steps) + static_cast<size_t>(t);
        if (cell_n[c] == 0) continue;
        const double inter = cell_sum[c] / cell_n[c] -
                             step_sum[static_cast<size_t>(t)] / step_n[static_cast<size_t>(t)] -
                             gpu_sum[static_cast<size_t>(g)] / gpu_n[static_cast<size_t>(g)] +
                             grand;
        ss += inter * inter;
        df += 1;
      }
    }
    df = df * (T - 1) * (G - 1) / (T * G);  // (T - 1)(G - 1) for a full grid
    vc.gpu_step = std::max(0.0, ss / df - v_cell);
  }
  const double replicas = T > 0 ? static_cast<double>(replica_steps.size()) / T : 0;
  if (T >= 2) {
    d.estimable.step = true;
    double noise = vc.gpu_step / G + mean_s2 / (n_cell * G);
    if (d.estimable.microbatch && replicas > 0) noise += vc.microbatch / (m_per_cell * replicas);
    vc.step = std::max(0.0, variance_of(step_mean) - noise);
  }
  if (G >= 2) {
    d.estimable.gpu = true;
    vc.gpu = std::max(0.0, variance_of(gpu_mean) - (vc.gpu_step + v_cell) / T);
  }
  // Effects' shapes: the microbatch group means of within-cell residuals.
  d.microbatch_mean.assign(n_pass, std::nan(""));
  for (auto& [key, g] : groups) {
    if (g.by_gpu.size() >= 2) d.group_means.push_back(g.sum / static_cast<double>(g.n));
  }
  for (size_t i = 0; i < n_pass; ++i) {
    if (key_of[i] == ~0ULL) continue;
    const Group& g = groups[key_of[i]];
    if (g.by_gpu.size() >= 2) d.microbatch_mean[i] = g.sum / static_cast<double>(g.n);
  }
  return d;
}

/// A lognormal slowdown of median 1.
DistributionSpec lognormal_of(double sigma) {
  DistributionSpec d;
  d.family = DistributionSpec::Family::lognormal;
  d.mu = 0;
  d.sigma = sigma;
  return d;
}

SlowdownFit lognormal_fit(double sigma, size_t samples) {
  SlowdownFit f;
  f.samples = samples;
  f.chosen = "lognormal";
  f.distribution = lognormal_of(sigma);
  f.p50 = 1;
  f.p95 = std::exp(1.6448536 * sigma);
  f.p99 = std::exp(2.3263479 * sigma);
  return f;
}

/// Slowdowns of the shape of `effects` (log scale, mean removed), scaled to variance `var`.
SlowdownFit shaped_fit(std::vector<double> effects, double var, const CalibrationOptions& o) {
  const double m = mean_of(effects);
  const double v = variance_of(effects);
  const double k = v > 0 ? std::sqrt(var / v) : 0;
  for (double& e : effects) e = std::exp(k * (e - m));
  return fit_slowdowns(std::move(effects), o);
}

std::string collective_op_of(const std::string& optype) {
  std::string s = optype;
  std::replace(s.begin(), s.end(), '_', '-');
  if (s.find("reduce-scatter") != std::string::npos ||
      s.find("reducescatter") != std::string::npos) {
    return "reduce_scatter";
  }
  if (s.find("all-gather") != std::string::npos || s.find("allgather") != std::string::npos) {
    return "all_gather";
  }
  return "all_reduce";
}

struct LevelInfo {
  const char* level;
  const char* target;
  double VarianceComponents::*field;
  bool Estimability::*estimable;
  const char* source;
  const char* cannot;
};

const LevelInfo kLevels[] = {
    {"step", "levels.step", &VarianceComponents::step, &Estimability::step,
     "variance of the step means of log pass durations (centred per pass type), less what the "
     "lower levels contribute to a mean",
     "one step: a step-wide factor needs at least two steps"},
    {"gpu_step", "levels.gpu_step", &VarianceComponents::gpu_step, &Estimability::gpu_step,
     "GPU x step interaction of the cell means, less the within-cell noise of a mean",
     "needs at least two GPUs and two steps"},
    {"microbatch", "levels.microbatch", &VarianceComponents::microbatch, &Estimability::microbatch,
     "covariance of within-cell residuals of one microbatch (replica, step, mb_id) on different "
     "GPUs (its pipeline stages)",
     "needs dp_rank and mb_id columns, passes of one microbatch on two GPUs (stages), and several "
     "microbatches per GPU and step"},
    {"forward_pass", "levels.forward_pass", &VarianceComponents::forward_pass, &Estimability::pass,
     "within-cell residual variance of forward passes, less the microbatch share",
     "needs more than two passes per GPU and step"},
    {"backward_pass", "levels.backward_pass", &VarianceComponents::backward_pass,
     &Estimability::pass,
     "within-cell residual variance of backward passes, less the microbatch share",
     "needs more than two passes per GPU and step"},
    {"gpu", "gpus.per_gpu", &VarianceComponents::gpu, &Estimability::gpu,
     "variance of the GPU means, less what GPU x step and the within-cell noise contribute",
     "one GPU: a persistent GPU factor needs at least two GPUs"},
};

}  // namespace

VarianceComponents estimate_components(const std::vector<PassSample>& passes,
                                       Estimability* estimable) {
  Decomposition d = decompose(passes);
  if (estimable != nullptr) *estimable = d.estimable;
  return d.components;
}

namespace {

/// Pipeline sends matched with their receives (P2pTransfer); op types name the direction and the
/// side (timeline_p2p_side). A forward send goes to stage + 1, a backward one to stage - 1.
std::vector<P2pTransfer> pipeline_transfers(const std::vector<Timeline>& timelines,
                                            std::vector<std::string>& notes) {
  struct Side {
    double start = 0, end = 0;
  };
  // (timeline, step, replica, receiving stage, call index) -> send and receive, per direction
  using Key = std::tuple<size_t, int64_t, int32_t, int32_t, int>;
  std::map<Key, std::pair<std::optional<Side>, std::optional<Side>>> by_direction[2];
  bool seen[2] = {false, false};
  size_t unplaced[2] = {0, 0}, undirected = 0;
  for (size_t ti = 0; ti < timelines.size(); ++ti) {
    const Timeline& t = timelines[ti];
    std::map<std::tuple<int32_t, int64_t, uint32_t>, int> index;  // rank, step, optype -> count
    for (const TimelineOp& op : t.ops) {
      if (op.kind != TimelineOpKind::p2p) continue;
      const std::optional<P2pSide> side = timeline_p2p_side(t.optypes[op.optype]);
      if (!side) {
        ++undirected;
        continue;
      }
      const int d = side->forward ? 0 : 1;
      seen[d] = true;
      if (op.stage < 0 || op.replica < 0) {
        ++unplaced[d];
        continue;
      }
      const int k = index[{op.rank, op.step, op.optype}]++;
      const int32_t to = side->send ? op.stage + (side->forward ? 1 : -1) : op.stage;
      auto& pair = by_direction[d][{ti, op.step, op.replica, to, k}];
      (side->send ? pair.first : pair.second) = Side{op.start_s, op.start_s + op.duration_s};
    }
  }
  if (undirected > 0) {
    notes.push_back(
        fmt::format("pipeline: {} p2p ops name no single direction (forward or "
                    "backward) and side (send or recv): not paired",
                    undirected));
  }
  std::vector<P2pTransfer> out;
  for (int d = 0; d < 2; ++d) {
    if (!seen[d]) continue;
    P2pTransfer pt;
    pt.direction = d == 0 ? "forward" : "backward";
    std::vector<double> transfers;
    size_t unmatched = 0;
    for (const auto& [key, pair] : by_direction[d]) {
      if (!pair.first || !pair.second) {
        ++unmatched;
        continue;
      }
      transfers.push_back(
          std::max(0.0, pair.second->end - std::max(pair.first->start, pair.second->start)));
    }
    pt.pairs = transfers.size();
    if (unmatched > 0 && !transfers.empty()) {
      notes.push_back(
          fmt::format("pipeline {}: {} sends or receives without their other side "
                      "(a neighbour not in the timeline): not paired",
                      pt.direction, unmatched));
    }
    if (unplaced[d] > 0 && !transfers.empty()) {
      notes.push_back(fmt::format("pipeline {}: {} p2p ops without stage or dp_rank: not paired",
                                  pt.direction, unplaced[d]));
    }
    if (transfers.empty()) {
      pt.reason = unplaced[d] > 0 ? fmt::format("{} p2p ops without stage or dp_rank", unplaced[d])
                                  : "no send matched a receive of the neighbouring stage";
    } else {
      pt.transfer_p50_s = quantile_of(transfers, 0.5);
      pt.transfer_p95_s = quantile_of(transfers, 0.95);
    }
    out.push_back(pt);
  }
  return out;
}

}  // namespace

TimelineCalibration calibrate_timelines(const std::vector<Timeline>& timelines,
                                        const TimelineOptions& options) {
  TimelineCalibration c;
  c.gpus_per_node = options.gpus_per_node;
  c.bootstrap_replicates = options.bootstrap_replicates;
  c.bootstrap_seed = options.bootstrap_seed;
  // Dense ids: GPU by (timeline, rank), step by (timeline, step), signature by (direction, stage).
  std::map<std::pair<size_t, int32_t>, int32_t> gpu_id;
  std::map<std::pair<size_t, int64_t>, int32_t> step_id;
  std::map<std::pair<bool, int32_t>, uint32_t> signature_id;
  std::map<std::pair<size_t, int32_t>, int32_t> replica_id;
  std::vector<PassSample> passes;
  std::vector<std::pair<bool, int32_t>> signature_of;
  std::map<std::pair<bool, int32_t>, std::vector<double>> stage_durations;
  size_t zero_passes = 0;
  for (size_t ti = 0; ti < timelines.size(); ++ti) {
    const Timeline& t = timelines[ti];
    c.inputs.push_back(t.path);
    c.ops += t.ops.size();
    for (const TimelineOp& op : t.ops) {
      gpu_id.try_emplace({ti, op.rank}, static_cast<int32_t>(gpu_id.size()));
      step_id.try_emplace({ti, op.step}, static_cast<int32_t>(step_id.size()));
    }
  }
  // Steps numbered in order (a map's order is by timeline then step).
  {
    int32_t i = 0;
    for (auto& [key, id] : step_id) id = i++;
  }
  {
    int32_t i = 0;
    for (auto& [key, id] : gpu_id) id = i++;
  }
  c.ranks = gpu_id.size();
  c.steps = step_id.size();
  for (size_t ti = 0; ti < timelines.size(); ++ti) {
    for (const TimelineOp& op : timelines[ti].ops) {
      if (op.kind != TimelineOpKind::forward && op.kind != TimelineOpKind::backward) continue;
      if (op.duration_s <= 0) {
        ++zero_passes;
        continue;
      }
      const bool forward = op.kind == TimelineOpKind::forward;
      auto [it, added] =
          signature_id.try_emplace({forward, op.stage}, static_cast<uint32_t>(signature_id.size()));
      if (added) signature_of.push_back({forward, op.stage});
      PassSample p;
      p.signature = it->second;
      p.gpu = gpu_id.at({ti, op.rank});
      p.step = step_id.at({ti, op.step});
      // A replica is one pipeline: numbered densely across timelines.
      p.replica =
          op.replica < 0
              ? -1
              : replica_id.try_emplace({ti, op.replica}, static_cast<int32_t>(replica_id.size()))
                    .first->second;
      p.microbatch = op.microbatch;
      p.forward = forward;
      p.log_duration = std::log(op.duration_s);
      passes.push_back(p);
      stage_durations[{forward, op.stage}].push_back(op.duration_s);
    }
  }
  c.passes = passes.size();
  if (zero_passes > 0) {
    c.notes.push_back(
        fmt::format("{} compute passes of zero duration left out of the "
                    "decomposition (a log needs a positive duration)",
                    zero_passes));
  }
  for (const auto& [key, durations] : stage_durations) {
    StageTime s;
    s.forward = key.first;
    s.stage = key.second;
    s.passes = durations.size();
    s.mean_s = mean_of(durations);
    double log_sum = 0;
    for (double v : durations) log_sum += std::log(v);
    s.geomean_s = std::exp(log_sum / static_cast<double>(durations.size()));
    s.p50_s = quantile_of(durations, 0.5);
    s.p95_s = quantile_of(durations, 0.95);
    c.stages.push_back(s);
  }
  // Levels, with a bootstrap over steps.
  if (passes.empty()) {
    c.notes.push_back("no compute passes (forward/backward optypes): no level can be estimated");
  }
  const Decomposition d = decompose(passes);
  std::vector<std::vector<double>> boot(std::size(kLevels));
  if (!passes.empty() && c.steps >= 2 && options.bootstrap_replicates > 0) {
    std::vector<std::vector<size_t>> by_step(c.steps);
    for (size_t i = 0; i < passes.size(); ++i)
      by_step[static_cast<size_t>(passes[i].step)].push_back(i);
    std::mt19937_64 rng(options.bootstrap_seed);
    std::vector<PassSample> resampled;
    for (int b = 0; b < options.bootstrap_replicates; ++b) {
      resampled.clear();
      for (size_t t = 0; t < c.steps; ++t) {
        const size_t from = static_cast<size_t>(rng() % c.steps);
        for (size_t i : by_step[from]) {
          PassSample p = passes[i];
          p.step = static_cast<int32_t>(t);
          resampled.push_back(p);
        }
      }
      const VarianceComponents vc = decompose(resampled).components;
      for (size_t l = 0; l < std::size(kLevels); ++l) {
        boot[l].push_back(std::sqrt(vc.*(kLevels[l].field)));
      }
    }
  }
  for (size_t l = 0; l < std::size(kLevels); ++l) {
    const LevelInfo& info = kLevels[l];
    LevelEstimate e;
    e.level = info.level;
    e.target = info.target;
    e.estimable = !passes.empty() && d.estimable.*(info.estimable);
    if (!e.estimable) {
      e.reason = passes.empty() ? "no compute passes" : info.cannot;
      c.notes.push_back(fmt::format("{} ({}): not estimable: {}", e.level, e.target, e.reason));
      c.levels.push_back(e);
      continue;
    }
    e.reason = info.source;
    e.sigma = std::sqrt(d.components.*(info.field));
    if (!boot[l].empty()) {
      e.sigma_low = quantile_of(boot[l], 0.05);
      e.sigma_high = quantile_of(boot[l], 0.95);
    } else {
      e.sigma_low = e.sigma_high = e.sigma;
    }
    // Durations carry at most 7 significant digits: a sigma below 1e-6 is their rounding.
    if (e.sigma <= 1e-6) {
      c.notes.push_back(
          fmt::format("{} ({}): estimate 0: the data shows no variation at this "
                      "level; nothing fitted",
                      e.level, e.target));
      c.levels.push_back(e);
      continue;
    }
    const std::string level = e.level;
    if (level == "microbatch" && d.group_means.size() >= options.fit.min_samples) {
      e.fit = shaped_fit(d.group_means, e.sigma * e.sigma, options.fit);
    } else if ((level == "forward_pass" || level == "backward_pass")) {
      const bool forward = level == "forward_pass";
      std::vector<double> residual;
      for (size_t i = 0; i < passes.size(); ++i) {
        if (passes[i].forward != forward) continue;
        const double mb = d.microbatch_mean[i];
        residual.push_back(d.within[i] - (std::isnan(mb) ? 0 : mb));
      }
      if (residual.size() >= options.fit.min_samples) {
        e.fit = shaped_fit(residual, e.sigma * e.sigma, options.fit);
      }
    }
    if (!e.fit) e.fit = lognormal_fit(e.sigma, passes.size());
    c.levels.push_back(e);
  }
  // Launch gaps: idle time of a rank before a compute pass, after every earlier op of the step.
  std::vector<double> gaps;
  for (const Timeline& t : timelines) {
    std::map<std::pair<int32_t, int64_t>, std::vector<const TimelineOp*>> by_rank_step;
    for (const TimelineOp& op : t.ops) by_rank_step[{op.rank, op.step}].push_back(&op);
    for (auto& [key, ops] : by_rank_step) {
      std::stable_sort(ops.begin(), ops.end(), [](const TimelineOp* a, const TimelineOp* b) {
        return a->start_s < b->start_s;
      });
      double busy_until = -1;
      bool any = false;
      for (const TimelineOp* op : ops) {
        const bool compute =
            op->kind == TimelineOpKind::forward || op->kind == TimelineOpKind::backward;
        if (compute && any && op->start_s >= busy_until) gaps.push_back(op->start_s - busy_until);
        busy_until =
            any ? std::max(busy_until, op->start_s + op->duration_s) : op->start_s + op->duration_s;
        any = true;
      }
    }
  }
  c.launch_gap_samples = gaps.size();
  if (gaps.size() < options.fit.min_samples) {
    c.launch_gap_reason = fmt::format(
        "{} compute passes start after their rank's earlier ops "
        "ended (at least {} needed)",
        gaps.size(), options.fit.min_samples);
  } else if (*std::max_element(gaps.begin(), gaps.end()) <= 0) {
    c.launch_gap_reason = "every pass starts the moment the previous op ends: no launch gaps";
  } else {
    const size_t zeros = static_cast<size_t>(std::count(gaps.begin(), gaps.end(), 0.0));
    if (zeros == 0) {
      c.launch_gap = fit_slowdowns(gaps, options.fit);
    } else {
      // Zero gaps are real (the pass started at once): keep the measured quantiles.
      SlowdownFit f = empirical_fit(gaps, options.fit);
      // A scenario's empirical values are at least 1e-12 (s): a 0 is written as that.
      for (double& v : f.distribution.samples) v = std::max(1e-12, v);
      c.launch_gap = f;
      c.notes.push_back(
          fmt::format("host.launch_gap: {} of {} gaps are 0; the measured quantiles "
                      "are kept (empirical; a 0 is written as 1e-12 s, the least a "
                      "scenario accepts)",
                      zeros, gaps.size()));
    }
  }
  if (!c.launch_gap) c.notes.push_back("host.launch_gap: not fitted: " + c.launch_gap_reason);
  // Collectives: calls matched by (step, optype, call index on the rank, group).
  struct Call {
    double last_start = -1e300, end = -1e300, first_start = 1e300;
    std::vector<double> starts;
    std::set<int32_t> nodes;
  };
  std::map<std::string, std::map<std::tuple<size_t, int64_t, int32_t, int>, Call>> calls;
  std::map<std::string, std::string> group_by;
  for (size_t ti = 0; ti < timelines.size(); ++ti) {
    const Timeline& t = timelines[ti];
    std::map<std::tuple<int32_t, int64_t, uint32_t>, int> index;  // rank, step, optype -> count
    for (const TimelineOp& op : t.ops) {
      if (op.kind != TimelineOpKind::collective) continue;
      const std::string& name = t.optypes[op.optype];
      const bool embedding = name.find("embedding") != std::string::npos;
      group_by[name] = embedding ? "replica" : "stage";
      const int k = index[{op.rank, op.step, op.optype}]++;
      Call& call = calls[name][{ti, op.step, embedding ? op.replica : op.stage, k}];
      call.last_start = std::max(call.last_start, op.start_s);
      call.first_start = std::min(call.first_start, op.start_s);
      call.end = std::max(call.end, op.start_s + op.duration_s);
      call.starts.push_back(op.start_s);
      call.nodes.insert(op.rank / static_cast<int32_t>(std::max<size_t>(1, options.gpus_per_node)));
    }
  }
  for (const auto& [name, by_call] : calls) {
    CollectiveTransfer ct;
    ct.optype = name;
    ct.op = collective_op_of(name);
    ct.group_by = group_by[name];
    // Nominal per group (same group and call index over steps): the median transfer.
    std::map<std::tuple<size_t, int32_t, int>, std::vector<double>> by_group;
    std::vector<double> transfers, waits;
    double magnitude = 0;
    bool inter_node = false;
    size_t single = 0;
    for (const auto& [key, call] : by_call) {
      if (call.starts.size() < 2) {
        ++single;
        continue;
      }
      ct.members = std::max(ct.members, call.starts.size());
      const double transfer = std::max(0.0, call.end - call.last_start);
      by_group[{std::get<0>(key), std::get<2>(key), std::get<3>(key)}].push_back(transfer);
      transfers.push_back(transfer);
      for (double s : call.starts) waits.push_back(call.last_start - s);
      magnitude = std::max(magnitude, std::fabs(call.end));
      inter_node = inter_node || call.nodes.size() > 1;
    }
    ct.calls = transfers.size();
    if (transfers.empty()) {
      ct.reason = fmt::format(
          "{} calls, each recorded on one rank only: the last member's start is "
          "unknown",
          single);
      c.collectives.push_back(ct);
      c.notes.push_back(fmt::format("network.jitter ({}): not fitted: {}", name, ct.reason));
      continue;
    }
    ct.transfer_p50_s = quantile_of(transfers, 0.5);
    ct.transfer_p95_s = quantile_of(transfers, 0.95);
    ct.wait_mean_s = mean_of(waits);
    std::vector<double> ratios, logs;
    for (auto& [group, values] : by_group) {
      const double nominal = quantile_of(values, 0.5);
      if (values.size() < 2 || nominal <= 0) continue;
      for (double v : values) {
        if (v <= 0) continue;
        ratios.push_back(v / nominal);
        logs.push_back(std::log(v / nominal));
      }
    }
    ct.spread = robust_sd(logs);
    // Timestamps carry about 7 significant digits (float32): the end and the start each round by
    // up to half a unit of the 7th digit of the largest time, relative to the transfer.
    const double unit = magnitude > 0 ? std::pow(10.0, std::floor(std::log10(magnitude)) - 6) : 0;
    ct.resolution = ct.transfer_p50_s > 0 ? unit / ct.transfer_p50_s : 0;
    const double floor = std::max(options.min_jitter_spread, 3 * ct.resolution);
    const std::string target =
        fmt::format("network.jitter.{}.{}", ct.op, inter_node ? "inter_node" : "intra_node");
    if (ratios.size() >= 2 && ct.spread <= floor) {
      ct.reason = fmt::format(
          "robust spread of log transfer ratios {:.4g} is within the floor "
          "{:.4g} (max of {} and 3x the timestamp resolution): no jitter shown",
          ct.spread, floor, options.min_jitter_spread);
    } else if (ratios.size() < options.fit.min_samples) {
      ct.reason = fmt::format("{} calls repeated over steps (at least {} needed)", ratios.size(),
                              options.fit.min_samples);
    } else {
      ct.jitter = fit_slowdowns(ratios, options.fit);
      ct.reason = target;
    }
    if (!ct.jitter)
      c.notes.push_back(fmt::format("{} ({}): not fitted: {}", target, name, ct.reason));
    c.collectives.push_back(ct);
  }
  c.pipeline = pipeline_transfers(timelines, c.notes);
  return c;
}

namespace {

std::string fit_line(const SlowdownFit& f) {
  return fmt::format("{} ({} samples, p50 {:.4g}, p95 {:.4g}, KS {:.4f})", f.chosen, f.samples,
                     f.p50, f.p95, f.ks_distance);
}

/// The YAML of a fit, its empirical samples written to a side file.
std::string entry_yaml(const SlowdownFit& f, const std::filesystem::path& out,
                       const std::string& name) {
  const DistributionSpec* measured = &f.distribution;
  for (const auto& [weight, component] : f.distribution.components) measured = &component;
  if (measured->family != DistributionSpec::Family::empirical)
    return distribution_yaml(f.distribution);
  const std::string file = fmt::format("{}.{}.txt", out.stem().string(), name);
  std::string values =
      fmt::format("# Empirical values of {}: {} quantiles (prismsim calibrate, timelines)\n", name,
                  measured->samples.size());
  for (double v : measured->samples) values += num(v) + '\n';
  write_file(out.parent_path() / file, values);
  return distribution_yaml(f.distribution, file);
}

}  // namespace

void write_timeline_section(const TimelineCalibration& c, const std::string& path,
                            const std::string& command) {
  const std::filesystem::path out(path);
  std::string y = fmt::format(
      "# A scenario's variability section, fitted by prismsim calibrate from op timelines:\n"
      "#   {}\n# Inputs: {}\n# {} ops, {} compute passes, {} ranks, {} steps. Variance components "
      "of\n"
      "# log pass durations by level (random effects, moments); intervals: 90% bootstrap over\n"
      "# steps ({} replicates, seed {}).\n",
      command, fmt::join(c.inputs, ", "), c.ops, c.passes, c.ranks, c.steps, c.bootstrap_replicates,
      c.bootstrap_seed);
  std::string levels, gpus;
  for (const LevelEstimate& e : c.levels) {
    const std::string key = e.target.substr(e.target.find('.') + 1);
    if (!e.estimable) {
      (e.target.rfind("levels.", 0) == 0 ? levels : gpus) +=
          fmt::format("  # {}: not estimable: {}\n", key, e.reason);
      continue;
    }
    std::string text = fmt::format("  # sigma {:.4g} [{:.4g}, {:.4g}]: {}\n", e.sigma, e.sigma_low,
                                   e.sigma_high, e.reason);
    if (e.fit) {
      text += fmt::format("  # {}\n  {}: {}\n", fit_line(*e.fit), key,
                          entry_yaml(*e.fit, out, e.target));
    } else {
      text += fmt::format("  # {}: none (estimate 0)\n", key);
    }
    (e.target.rfind("levels.", 0) == 0 ? levels : gpus) += text;
  }
  if (levels.find(": {") != std::string::npos) {
    y += "levels:\n" + levels;
  } else {
    y += "# levels: none fitted\n" + levels;
  }
  if (gpus.find(": {") != std::string::npos) {
    y += "gpus:\n" + gpus;
  } else {
    y += fmt::format("# gpus:\n{}", gpus);
  }
  if (c.launch_gap) {
    y += fmt::format(
        "host:\n  # idle time of a rank before a pass after its earlier ops ended: {}\n"
        "  launch_gap: {{unit: s, {}\n",
        fit_line(*c.launch_gap), entry_yaml(*c.launch_gap, out, "host.launch_gap").substr(1));
  } else {
    y += fmt::format("# host.launch_gap: not fitted: {}\n", c.launch_gap_reason);
  }
  std::map<std::string, std::map<std::string, std::string>> jitter;  // op -> scope -> text
  std::string none;
  for (const CollectiveTransfer& ct : c.collectives) {
    if (!ct.jitter) {
      none += fmt::format("# {} ({}): no jitter fitted: {}\n", ct.optype, ct.op, ct.reason);
      continue;
    }
    const std::string scope = ct.reason.substr(ct.reason.rfind('.') + 1);
    jitter[ct.op][scope] = fmt::format(
        "      # {}: transfer p50 {:.4g} s, spread {:.4g}; {}\n"
        "      {}: {}\n",
        ct.optype, ct.transfer_p50_s, ct.spread, fit_line(*ct.jitter), scope,
        entry_yaml(*ct.jitter, out, ct.reason));
  }
  if (!jitter.empty()) {
    y += "network:\n  jitter:\n";
    for (const auto& [op, scopes] : jitter) {
      y += fmt::format("    {}:\n", op);
      for (const auto& [scope, text] : scopes) y += text;
    }
  }
  y += none;
  y += "# Compute time per pass by stage (s; geometric mean is the nominal the levels multiply):\n";
  for (const StageTime& s : c.stages) {
    y += fmt::format(
        "#   stage {} {}: {} passes, mean {:.6g}, geometric mean {:.6g}, p50 {:.6g}, "
        "p95 {:.6g}\n",
        s.stage, s.forward ? "forward" : "backward", s.passes, s.mean_s, s.geomean_s, s.p50_s,
        s.p95_s);
  }
  write_file(path, y);
}

std::string timeline_report(const TimelineCalibration& c) {
  std::string out = fmt::format("timelines: {} ({} ops, {} compute passes, {} ranks, {} steps)\n\n",
                                fmt::join(c.inputs, ", "), c.ops, c.passes, c.ranks, c.steps);
  out += fmt::format("{:<14} {:<22} {:>8} {:>19}  {}\n", "level", "entry", "sigma", "90% interval",
                     "distribution");
  for (const LevelEstimate& e : c.levels) {
    if (!e.estimable) {
      out += fmt::format("{:<14} {:<22} {:>8} {:>19}  not estimable: {}\n", e.level, e.target, "-",
                         "-", e.reason);
      continue;
    }
    out += fmt::format("{:<14} {:<22} {:>8.4f} [{:>8.4f}, {:>8.4f}]  {}\n", e.level, e.target,
                       e.sigma, e.sigma_low, e.sigma_high, e.fit ? fit_line(*e.fit) : "none (0)");
  }
  out += "\nstage  direction  passes      mean s   geomean s       p95 s\n";
  for (const StageTime& s : c.stages) {
    out +=
        fmt::format("{:>5}  {:<9} {:>7} {:>11.6f} {:>11.6f} {:>11.6f}\n", s.stage,
                    s.forward ? "forward" : "backward", s.passes, s.mean_s, s.geomean_s, s.p95_s);
  }
  out += fmt::format("\nhost.launch_gap: {} gaps; {}\n", c.launch_gap_samples,
                     c.launch_gap ? fit_line(*c.launch_gap) : "not fitted: " + c.launch_gap_reason);
  out +=
      "\ncollective                     op              calls  transfer p50 s  wait mean s  spread "
      " jitter\n";
  for (const CollectiveTransfer& ct : c.collectives) {
    out += fmt::format("{:<30} {:<15} {:>5} {:>15.6g} {:>12.6g} {:>7.4f}  {}\n", ct.optype, ct.op,
                       ct.calls, ct.transfer_p50_s, ct.wait_mean_s, ct.spread,
                       ct.jitter ? ct.reason + ": " + fit_line(*ct.jitter) : "none: " + ct.reason);
  }
  if (!c.pipeline.empty()) {
    out += "\npipeline p2p  pairs  transfer p50 s  transfer p95 s\n";
    for (const P2pTransfer& pt : c.pipeline) {
      out += pt.pairs > 0 ? fmt::format("{:<12} {:>6} {:>15.6g} {:>15.6g}\n", pt.direction,
                                        pt.pairs, pt.transfer_p50_s, pt.transfer_p95_s)
                          : fmt::format("{:<12} {:>6}  none: {}\n", pt.direction, 0, pt.reason);
    }
  }
  if (!c.notes.empty()) {
    out += "\nnot estimated or not fitted:\n";
    for (const std::string& n : c.notes) out += "  " + n + "\n";
  }
  return out;
}

namespace {

void write_fit(JsonWriter& j, const SlowdownFit& f) {
  j.begin_object(JsonWriter::Layout::line);
  j.member("chosen", f.chosen).member("samples", f.samples).member("p50", f.p50);
  j.member("p95", f.p95).member("ks", f.ks_distance);
  j.member("distribution",
           distribution_yaml(f.distribution, f.chosen == "empirical" ? "(file)" : ""));
  j.end();
}

}  // namespace

std::string timeline_json(const TimelineCalibration& c) {
  JsonWriter j;
  j.begin_object();
  j.member("kind", "timelines");
  j.key("inputs").values(c.inputs);
  j.member("ops", c.ops)
      .member("passes", c.passes)
      .member("ranks", c.ranks)
      .member("steps", c.steps);
  j.key("bootstrap").begin_object(JsonWriter::Layout::line);
  j.member("over", "steps").member("replicates", c.bootstrap_replicates);
  j.member("seed", c.bootstrap_seed).member("interval", 0.9).end();
  j.key("levels").begin_array();
  for (const LevelEstimate& e : c.levels) {
    j.begin_object(JsonWriter::Layout::line);
    j.member("level", e.level).member("entry", e.target).member("estimable", e.estimable);
    if (e.estimable) {
      j.member("sigma", e.sigma)
          .member("sigma_low", e.sigma_low)
          .member("sigma_high", e.sigma_high);
      j.member("source", e.reason);
      if (e.fit) {
        j.key("fit");
        write_fit(j, *e.fit);
      } else {
        j.member("fitted", "none: the estimate is 0");
      }
    } else {
      j.member("reason", e.reason);
    }
    j.end();
  }
  j.end();
  j.key("stages").begin_array();
  for (const StageTime& s : c.stages) {
    j.begin_object(JsonWriter::Layout::line);
    j.member("stage", s.stage).member("direction", s.forward ? "forward" : "backward");
    j.member("passes", s.passes).member("mean_s", s.mean_s).member("geomean_s", s.geomean_s);
    j.member("p50_s", s.p50_s).member("p95_s", s.p95_s).end();
  }
  j.end();
  j.key("launch_gap").begin_object(JsonWriter::Layout::line);
  j.member("entry", "host.launch_gap").member("samples", c.launch_gap_samples);
  j.member(
      "source",
      "idle time of a rank before a compute pass, after all its earlier ops of the step ended");
  if (c.launch_gap) {
    j.key("fit");
    write_fit(j, *c.launch_gap);
  } else {
    j.member("reason", c.launch_gap_reason);
  }
  j.end();
  j.key("collectives").begin_array();
  for (const CollectiveTransfer& ct : c.collectives) {
    j.begin_object(JsonWriter::Layout::line);
    j.member("optype", ct.optype).member("op", ct.op).member("group_by", ct.group_by);
    j.member("calls", ct.calls).member("members", ct.members);
    j.member("transfer_p50_s", ct.transfer_p50_s).member("transfer_p95_s", ct.transfer_p95_s);
    j.member("wait_mean_s", ct.wait_mean_s).member("spread", ct.spread);
    j.member("resolution", ct.resolution);
    j.member("source", "transfer = last member's end minus the last member's start");
    if (ct.jitter) {
      j.member("entry", ct.reason).key("fit");
      write_fit(j, *ct.jitter);
    } else {
      j.member("reason", ct.reason);
    }
    j.end();
  }
  j.end();
  j.key("pipeline").begin_array();
  for (const P2pTransfer& pt : c.pipeline) {
    j.begin_object(JsonWriter::Layout::line);
    j.member("direction", pt.direction).member("pairs", pt.pairs);
    if (pt.pairs > 0) {
      j.member("transfer_p50_s", pt.transfer_p50_s).member("transfer_p95_s", pt.transfer_p95_s);
      j.member("source", "transfer = the receive's end minus the later start of send and receive");
    } else {
      j.member("reason", pt.reason);
    }
    j.end();
  }
  j.end();
  j.key("not_estimated").values(c.notes, JsonWriter::Layout::block);
  j.end();
  return j.take() + "\n";
}

}  // namespace prismsim
