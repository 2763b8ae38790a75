#include "variability/variation.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "core/seeds.hpp"
#include "core/text.hpp"
#include "workload/transformer_job.hpp"

namespace prismsim {
namespace {

/// The rank a slow node or GPU is placed at: its `rank`, else its grid coordinates.
template <typename Place>
int placed_rank(const Place& place, const RankGrid& grid) {
  if (place.rank >= 0) return place.rank;
  std::array<int, 4> coords{};
  coords[static_cast<size_t>(ParallelDim::tp)] = place.tp;
  coords[static_cast<size_t>(ParallelDim::cp)] = place.cp;
  coords[static_cast<size_t>(ParallelDim::pp)] = place.stage;
  coords[static_cast<size_t>(ParallelDim::dp)] = place.replica;
  return grid.rank(coords);
}

/// What a stream of draws is for: each purpose has its own streams.
enum class Purpose : uint64_t {
  kernel = 1,
  analytic_collective,
  collective,
  gpu,
  node,
  rack,
  slow_node,
  random_slow_node,
  random_slowdown,
  ambient,
  regime,
  wan_rtt,
  transfer,
  // Appended: existing purposes keep their streams.
  run_level,
  step_level,
  node_step_level,
  gpu_step_level,
  microbatch_level,
  forward_pass_level,
  backward_pass_level,
  launch_gap,
  host_step,
  slow_gpu,
  end,  // not a purpose: the size of RunVariation's key table (append purposes above it)
};

/// Key of the streams of one purpose in one run.
uint64_t stream_key(uint64_t run_seed, Purpose purpose) {
  return splitmix64(run_seed ^ splitmix64(static_cast<uint64_t>(purpose) << 32));
}

/// The stream of `entity` (a GPU, node, group, ...) among those keyed `key`.
uint64_t entity_stream(uint64_t key, uint64_t entity) {
  return splitmix64(key ^ splitmix64(entity));
}

/// Draw `index` of the stream of `entity`.
uint64_t word(uint64_t key, uint64_t entity, uint64_t index = 0) {
  return splitmix64(entity_stream(key, entity) + index);
}

double uniform(uint64_t w) { return static_cast<double>(w >> 11) * 0x1p-53; }

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

/// Word `counter` of the stream `key`: wyrand's output function (one 64x64->128 multiply) on a
/// Weyl sequence. Cheaper than SplitMix64 for the tens of millions of kernel draws of a run.
inline uint64_t kernel_word(uint64_t key, uint64_t counter) {
  __extension__ using Wide = unsigned __int128;
  const uint64_t s = key + (counter + 1) * 0xa0761d6478bd642fULL;
  const Wide product = static_cast<Wide>(s) * (s ^ 0xe7037ed1a0b428dbULL);
  return static_cast<uint64_t>(product >> 64) ^ static_cast<uint64_t>(product);
}

}  // namespace

VariationModel::VariationModel(const VariabilitySpec& spec, const Scenario& scenario,
                               const Topology& topology, const Job& job)
    : spec_(spec), job_(job), topology_(topology), thermal_model_(spec.thermal) {
  active_ = !spec_.empty();
  if (!active_) return;
  for (const auto& [scope, d] : spec_.jitter) jitter_[scope] = sampler_for(d);
  for (const auto& [key, d] : spec_.jitter_by_op) jitter_by_op_[key] = sampler_for(d);
  for (const auto& [scope, d] : spec_.transfer_jitter) transfer_jitter_[scope] = sampler_for(d);
  for (const Segment& segment : job.segments) segment_plans_.push_back(plan(segment.kernels));
  plain_plan_ = plan({Kernel{"layer", KernelClass::gemm, 1.0}});

  const bool any_jitter = !jitter_.empty() || !jitter_by_op_.empty();
  if (any_jitter && !job.link_quotient.copies.empty()) {
    throw std::logic_error("collective jitter needs every rank simulated on shared links");
  }
  group_scope_.assign(job.groups.size(), std::nullopt);
  for (GroupId g(0); g.index() < job.groups.size() && any_jitter; g = GroupId(g.value() + 1)) {
    std::vector<int> gpus;
    for (int rank : job.groups[g].ranks) gpus.push_back(job.gpu_of_rank[static_cast<size_t>(rank)]);
    group_scope_[g] = topology.scope_of(gpus);
  }
  // With tensor-parallel symmetry a simulated group stands for its copies at the other
  // positions: its members wait for the slowest copy at their next lockstep collective.
  group_copies_.resize(job.groups.size());
  const bool copies = any_jitter && !job.representative.empty();
  std::map<std::vector<int>, GroupId> simulated;
  for (GroupId g(0); g.index() < job.groups.size(); g = GroupId(g.value() + 1)) {
    group_copies_[g] = {g};
    if (copies) simulated.emplace(job.groups[g].ranks, g);
  }
  for (GroupId h(0); h.index() < job.groups.size() && copies; h = GroupId(h.value() + 1)) {
    std::vector<int> key;
    for (int rank : job.groups[h].ranks) {
      key.push_back(job.representative[static_cast<size_t>(rank)]);
    }
    auto it = simulated.find(key);
    if (it != simulated.end() && it->second != h) group_copies_[it->second].push_back(h);
  }

  double cumulative = 0;
  for (const RegimeSpec& regime : spec_.regimes)
    regime_cdf_.push_back(cumulative += regime.probability);

  if (spec_.has_gpu_speed) {
    per_gpu_ = sampler_for(spec_.per_gpu);
    per_node_ = sampler_for(spec_.per_node);
    per_rack_ = sampler_for(spec_.per_rack);
  }
  const RankGrid grid(scenario.parallelism);
  for (const SlowNodeSpec& slow : spec_.slow_nodes) {
    int node = slow.node;
    if (node < 0) {
      const int rank = placed_rank(slow, grid);
      node = topology.locate(job.gpu_of_rank[static_cast<size_t>(rank)]).node;
    }
    slow_nodes_.emplace_back(node, sampler_for(slow.slowdown));
  }
  if (spec_.random_slow_node_probability > 0) {
    random_slowdown_ = sampler_for(spec_.random_slow_node_slowdown);
  }
  for (const SlowGpuSpec& slow : spec_.slow_gpus) {
    int gpu = slow.gpu;
    if (gpu < 0) {
      const int rank = placed_rank(slow, grid);
      gpu = job.gpu_of_rank[static_cast<size_t>(rank)];
    }
    SlowGpu s{gpu, sampler_for(slow.slowdown), -1, -1};
    if (slow.forward) s.forward = sampler_for(*slow.forward);
    if (slow.backward) s.backward = sampler_for(*slow.backward);
    slow_gpus_.push_back(s);
  }
  const LevelsSpec& levels = spec_.levels;
  auto level = [&](const std::optional<DistributionSpec>& d) { return d ? sampler_for(*d) : -1; };
  run_level_ = level(levels.run);
  step_level_ = level(levels.step);
  node_step_level_ = level(levels.node_step);
  gpu_step_level_ = level(levels.gpu_step);
  microbatch_level_ = level(levels.microbatch);
  forward_pass_level_ = level(levels.forward_pass);
  backward_pass_level_ = level(levels.backward_pass);
  launch_gap_ = level(spec_.host.launch_gap_s);
  host_step_ = level(spec_.host.step_s);
  levels_ = !levels.empty() || !slow_gpus_.empty();
  for (int rank = 0; rank < job.rank_count() && levels.microbatch; ++rank) {
    replica_of_rank_.push_back(grid.coords(rank)[static_cast<size_t>(ParallelDim::dp)]);
  }
  thermal_ = spec_.has_thermal;
  if (thermal_) ambient_ = sampler_for(spec_.thermal.ambient_c);
  if (spec_.has_wan_rtt) wan_rtt_ = sampler_for(spec_.wan_rtt_s);
  rack_nodes_ = spec_.rack_nodes > 0 ? spec_.rack_nodes : topology.nodes_per_leaf();
  varies_units_ = spec_.has_gpu_speed || !slow_nodes_.empty() || random_slowdown_ >= 0 || thermal_;
}

int VariationModel::sampler_for(const DistributionSpec& spec) {
  auto [it, added] = sampler_of_spec_.try_emplace(&spec, static_cast<int>(samplers_.size()));
  if (added) samplers_.emplace_back(spec);
  return it->second;
}

/// A kernel name's entry (exact, or a prefix ending in '*'), else its class's, else the default.
int VariationModel::kernel_sampler(const Kernel& kernel) {
  for (size_t i = 0; i < spec_.kernel_names.size(); ++i) {
    if (matches_name_pattern(spec_.kernel_names[i].first, kernel.name)) {
      return sampler_for(spec_.kernel_names[i].second);
    }
  }
  auto it = spec_.kernel_classes.find(to_string(kernel.kernel_class));
  if (it != spec_.kernel_classes.end()) return sampler_for(it->second);
  return spec_.has_kernel_default ? sampler_for(spec_.kernel_default) : -1;
}

int VariationModel::jitter_sampler(CollectiveOp op, CommScope scope) const {
  if (auto by_op = jitter_by_op_.find({op, scope}); by_op != jitter_by_op_.end()) {
    return by_op->second;
  }
  auto by_scope = jitter_.find(scope);
  return by_scope == jitter_.end() ? -1 : by_scope->second;
}

VariationModel::SegmentPlan VariationModel::plan(const std::vector<Kernel>& kernels) {
  SegmentPlan plan;
  double chunk_clock = 0, chunk_other = 0, chunk_idle = 0;
  auto close_chunk = [&] {
    plan.chunk_end.push_back(plan.sampler.size());
    plan.chunk_clock_s.push_back(chunk_clock);
    plan.chunk_other_s.push_back(chunk_other);
    plan.chunk_idle_s.push_back(chunk_idle);
    plan.compute_sum_s += chunk_clock + chunk_other;
    plan.idle_sum_s += chunk_idle;
    chunk_clock = chunk_other = chunk_idle = 0;
  };
  for (const Kernel& kernel : kernels) {
    if (kernel.kernel_class == KernelClass::communication) {
      close_chunk();
      SegmentPlan::Collective c;
      c.seconds = kernel.seconds;
      c.jitter = jitter_sampler(kernel.op, kernel.scope);
      c.inter_node = kernel.scope != CommScope::intra_node;
      plan.has_inter_node |= c.inter_node;
      plan.communication_s += kernel.seconds;
      if (c.jitter >= 0) {
        plan.jittered.push_back(plan.collectives.size());
      } else {
        (c.inter_node ? plan.steady_inter_s : plan.steady_intra_s) += kernel.seconds;
      }
      plan.collectives.push_back(c);
      continue;
    }
    if (kernel.kernel_class == KernelClass::idle) {
      // Waiting for the host: neither noise nor the GPU's speed changes it.
      plan.sampler.push_back(-1);
      plan.clock_s.push_back(0);
      plan.other_s.push_back(0);
      plan.idle_s.push_back(kernel.seconds);
      chunk_idle += kernel.seconds;
      continue;
    }
    // Segments repeat the same kernels: resolve each name once.
    auto [it, added] =
        sampler_of_kernel_.try_emplace({kernel.name, static_cast<int>(kernel.kernel_class)}, -1);
    if (added) it->second = kernel_sampler(kernel);
    plan.sampler.push_back(it->second);
    plan.kernel_noise |= it->second >= 0;
    const bool clock_bound =
        kernel.kernel_class == KernelClass::gemm || kernel.kernel_class == KernelClass::attention;
    plan.clock_s.push_back(clock_bound ? kernel.seconds : 0.0);
    plan.other_s.push_back(clock_bound ? 0.0 : kernel.seconds);
    plan.idle_s.push_back(0);
    (clock_bound ? chunk_clock : chunk_other) += kernel.seconds;
  }
  close_chunk();
  return plan;
}

RunVariation::RunVariation(const VariationModel& model, uint64_t run_seed)
    : model_(model), seed_(run_seed) {
  for (uint64_t p = 0; p < static_cast<uint64_t>(Purpose::end); ++p) {
    purpose_keys_.push_back(stream_key(run_seed, static_cast<Purpose>(p)));
  }
  const Job& job = model.job_;
  units_.resize(static_cast<size_t>(job.rank_count()));
  calls_.resize(job.groups.size());
  const uint64_t kernel_key = stream_key(run_seed, Purpose::kernel);
  const uint64_t comm_key = stream_key(run_seed, Purpose::analytic_collective);
  for (int rank = 0; rank < job.rank_count(); ++rank) {
    if (!job.simulated(rank) || !job.program_of_rank[static_cast<size_t>(rank)]) continue;
    Unit& unit = units_[static_cast<size_t>(rank)];
    if (job.lockstep_of_rank.empty()) {
      unit.gpus = {job.gpu_of_rank[static_cast<size_t>(rank)]};
    } else {
      const auto& members =
          job.lockstep[static_cast<size_t>(job.lockstep_of_rank[static_cast<size_t>(rank)])];
      for (int member : members) unit.gpus.push_back(job.gpu_of_rank[static_cast<size_t>(member)]);
    }
    if (!model.replica_of_rank_.empty())
      unit.replica = model.replica_of_rank_[static_cast<size_t>(rank)];
    unit.microbatch_key = stream(static_cast<uint64_t>(Purpose::microbatch_level),
                                 static_cast<uint64_t>(unit.replica));
    for (int gpu : unit.gpus) {
      unit.nodes.push_back(model.topology_.locate(gpu).node);
      double all = 1, forward = 1, backward = 1;
      for (size_t i = 0; i < model.slow_gpus_.size(); ++i) {
        const auto& slow = model.slow_gpus_[i];
        if (slow.gpu != gpu) continue;
        const double d = draw(slow.all, static_cast<uint64_t>(Purpose::slow_gpu), i, 0);
        all *= d;
        forward *= slow.forward >= 0
                       ? draw(slow.forward, static_cast<uint64_t>(Purpose::slow_gpu), i, 1)
                       : d;
        backward *= slow.backward >= 0
                        ? draw(slow.backward, static_cast<uint64_t>(Purpose::slow_gpu), i, 2)
                        : d;
      }
      unit.slow_other.push_back(all);
      unit.slow_forward.push_back(forward);
      unit.slow_backward.push_back(backward);
      unit.slowdown.push_back(model.varies_units_ ? persistent_slowdown(gpu) : 1.0);
      unit.kernel_keys.push_back(splitmix64(kernel_key ^ splitmix64(static_cast<uint64_t>(gpu))));
      // Drawn at every pass: their streams' keys are kept.
      const auto entity = static_cast<uint64_t>(gpu);
      unit.launch_gap_keys.push_back(stream(static_cast<uint64_t>(Purpose::launch_gap), entity));
      unit.forward_keys.push_back(
          stream(static_cast<uint64_t>(Purpose::forward_pass_level), entity));
      unit.backward_keys.push_back(
          stream(static_cast<uint64_t>(Purpose::backward_pass_level), entity));
      if (model.thermal_) {
        unit.ambient_c.push_back(ambient_c(gpu));
        unit.temperature_c.push_back(model.thermal_model_.initial_c(unit.ambient_c.back()));
        peak_temperature_c_ = std::max(peak_temperature_c_, unit.temperature_c.back());
      }
      unit.varies |= unit.slowdown.back() != 1.0 || all != 1.0 || forward != 1.0 || backward != 1.0;
    }
    unit.varies |= model.thermal_ || !model.spec_.levels.empty();
    unit.max_slowdown = *std::max_element(unit.slowdown.begin(), unit.slowdown.end());
    unit.comm_key = splitmix64(comm_key ^ splitmix64(static_cast<uint64_t>(*std::min_element(
                                              unit.gpus.begin(), unit.gpus.end()))));
  }
  run_factor_ = draw(model.run_level_, static_cast<uint64_t>(Purpose::run_level), 0);
}

double RunVariation::draw(int sampler, uint64_t purpose, uint64_t entity, uint64_t index) const {
  if (sampler < 0) return 1.0;
  return model_.samplers_[static_cast<size_t>(sampler)].draw(
      word(purpose_keys_[purpose], entity, index));
}

uint64_t RunVariation::stream(uint64_t purpose, uint64_t entity) const {
  return entity_stream(purpose_keys_[purpose], entity);
}

double RunVariation::draw_in(int sampler, uint64_t stream_key, uint64_t index) const {
  if (sampler < 0) return 1.0;
  return model_.samplers_[static_cast<size_t>(sampler)].draw(splitmix64(stream_key + index));
}

double RunVariation::level_factor(Unit& unit, size_t i, const Op& op, int step) {
  const VariationModel& m = model_;
  const auto* run = std::get_if<ops::RunSegment>(&op);
  const PassRef* pass = run != nullptr && run->pass ? &*run->pass : nullptr;
  const auto s = static_cast<uint64_t>(step);
  if (unit.level_step != step) {
    // The levels of the whole step, drawn once per step and member.
    unit.level_step = step;
    unit.step_levels.resize(unit.gpus.size());
    const double shared =
        run_factor_ * draw(m.step_level_, static_cast<uint64_t>(Purpose::step_level), 0, s);
    for (size_t k = 0; k < unit.gpus.size(); ++k) {
      unit.step_levels[k] =
          shared *
          draw(m.node_step_level_, static_cast<uint64_t>(Purpose::node_step_level),
               static_cast<uint64_t>(unit.nodes[k]), s) *
          draw(m.gpu_step_level_, static_cast<uint64_t>(Purpose::gpu_step_level),
               static_cast<uint64_t>(unit.gpus[k]), s);
    }
  }
  double f = unit.step_levels[i];
  if (run != nullptr && run->microbatch && m.microbatch_level_ >= 0) {
    // Shared by every stage's passes of the replica's microbatch.
    f *= draw_in(m.microbatch_level_, unit.microbatch_key,
                 s * 1000003 + static_cast<uint64_t>(*run->microbatch));
  }
  if (pass) {
    const int sampler = pass->forward ? m.forward_pass_level_ : m.backward_pass_level_;
    const uint64_t key = pass->forward ? unit.forward_keys[i] : unit.backward_keys[i];
    f *= draw_in(sampler, key, s * 1000003 + static_cast<uint64_t>(pass->index));
    f *= pass->forward ? unit.slow_forward[i] : unit.slow_backward[i];
  } else {
    f *= unit.slow_other[i];
  }
  return f;
}

double RunVariation::launch_gap_s(int rank, int step, const PassRef& pass) const {
  if (model_.launch_gap_ < 0) return 0;
  const Unit& unit = units_[static_cast<size_t>(rank)];
  const uint64_t index = static_cast<uint64_t>(step) * 1000003 + static_cast<uint64_t>(pass.index);
  double gap = 0;
  for (uint64_t key : unit.launch_gap_keys)
    gap = std::max(gap, draw_in(model_.launch_gap_, key, index));
  return gap;
}

double RunVariation::host_step_s(int rank, int step) const {
  if (model_.host_step_ < 0) return 0;
  const Unit& unit = units_[static_cast<size_t>(rank)];
  double seconds = 0;
  for (int gpu : unit.gpus) {
    seconds = std::max(seconds, draw(model_.host_step_, static_cast<uint64_t>(Purpose::host_step),
                                     static_cast<uint64_t>(gpu), static_cast<uint64_t>(step)));
  }
  return seconds;
}

double RunVariation::persistent_slowdown(int gpu) const {
  const VariationModel& m = model_;
  const int node = m.topology_.locate(gpu).node;
  double slowdown = 1;
  auto draw = [&](int sampler, Purpose purpose, uint64_t entity) {
    if (sampler >= 0) {
      slowdown *=
          m.samplers_[static_cast<size_t>(sampler)].draw(word(stream_key(seed_, purpose), entity));
    }
  };
  draw(m.per_gpu_, Purpose::gpu, static_cast<uint64_t>(gpu));
  draw(m.per_node_, Purpose::node, static_cast<uint64_t>(node));
  draw(m.per_rack_, Purpose::rack, static_cast<uint64_t>(node / m.rack_nodes_));
  for (size_t i = 0; i < m.slow_nodes_.size(); ++i) {
    if (m.slow_nodes_[i].first == node) draw(m.slow_nodes_[i].second, Purpose::slow_node, i);
  }
  if (m.random_slowdown_ >= 0 &&
      uniform(word(stream_key(seed_, Purpose::random_slow_node), static_cast<uint64_t>(node))) <
          m.spec_.random_slow_node_probability) {
    draw(m.random_slowdown_, Purpose::random_slowdown, static_cast<uint64_t>(node));
  }
  return slowdown;
}

double RunVariation::ambient_c(int gpu) const {
  const int node = model_.topology_.locate(gpu).node;
  const int entity = model_.spec_.thermal.ambient_per_rack ? node / model_.rack_nodes_ : node;
  return model_.samplers_[static_cast<size_t>(model_.ambient_)].draw(
      word(stream_key(seed_, Purpose::ambient), static_cast<uint64_t>(entity)));
}

void RunVariation::record_chunk(const VariationModel::SegmentPlan& plan, size_t chunk,
                                double inverse_clock, double slowdown, double chunk_s,
                                std::vector<double>& out) {
  for (size_t k = chunk == 0 ? 0 : plan.chunk_end[chunk - 1]; k < plan.chunk_end[chunk]; ++k) {
    const double factor = plan.kernel_noise ? factors_[k] : 1.0;
    out.push_back((plan.clock_s[k] * inverse_clock + plan.other_s[k]) * factor * slowdown +
                  plan.idle_s[k]);
  }
  if (chunk < plan.collectives.size()) {
    // The collective after the chunk: its member's own compute time until the call's is known.
    collective_at_[chunk] = out.size();
    out.push_back(chunk_s);
  }
}

ExecutionTime RunVariation::execute(int rank, const std::vector<const Op*>& ops, double now_s,
                                    int step, std::vector<std::vector<double>>* kernel_seconds,
                                    double skipped_idle_s) {
  const VariationModel& m = model_;
  Unit& unit = units_[static_cast<size_t>(rank)];
  const size_t members = unit.gpus.size();
  clock_.assign(members, 1.0);
  if (m.thermal_) {
    for (size_t i = 0; i < members; ++i) {
      // Idle since its last execution.
      unit.temperature_c[i] = m.thermal_model_.advance(unit.temperature_c[i], unit.ambient_c[i],
                                                       now_s - unit.updated_s, 0, 1);
      clock_[i] = m.thermal_model_.clock(unit.temperature_c[i]);
    }
  }
  busy_.assign(members, 0);
  if (kernel_seconds != nullptr) kernel_seconds->assign(members, {});
  const double regime_slowdown = regime(step);
  const Sampler* samplers = m.samplers_.data();
  ExecutionTime time;
  for (const Op* op : ops) {
    const uint64_t index = unit.executions++;
    const auto* run = std::get_if<ops::RunSegment>(op);
    const bool plain = run == nullptr;
    const VariationModel::SegmentPlan& plan =
        plain ? m.plain_plan_ : m.segment_plans_[run->segment];
    const bool regime_applies = plan.has_inter_node && regime_slowdown != 1.0;
    if (!plan.kernel_noise && plan.jittered.empty() && !unit.varies && !regime_applies) {
      // Nothing varies: the nominal time, exactly.
      const double seconds = nominal_seconds(m.job_, *op);
      time.seconds += seconds;
      time.communication_s += plan.communication_s;
      for (double& b : busy_) b += seconds - plan.communication_s;
      if (kernel_seconds != nullptr) {
        for (auto& recorded : *kernel_seconds) {
          if (plain) {
            recorded.push_back(seconds);
            continue;
          }
          for (const Kernel& k : m.job_.segments[run->segment].kernels) {
            recorded.push_back(k.seconds);
          }
        }
      }
      continue;
    }
    // Runs of compute between analytic collectives: the lockstep group waits for its slowest
    // member at each collective.
    // A plain op's plan is one kernel of 1 s.
    const double scale = plain ? std::get<ops::ComputeFor>(*op).seconds : 1.0;
    const size_t chunks = plan.chunk_end.size();
    const size_t count = plan.sampler.size();
    level_.assign(members, 1.0);
    double max_slowdown = unit.max_slowdown;
    if (m.levels_) {
      max_slowdown = 0;
      for (size_t i = 0; i < members; ++i) {
        level_[i] = level_factor(unit, i, *op, step);
        max_slowdown = std::max(max_slowdown, unit.slowdown[i] * level_[i]);
      }
    }
    const uint64_t comm_key = splitmix64(unit.comm_key + index * kGolden);
    // Collective c's time in this execution: its jitter's draw, the network regime.
    auto collective_s = [&](size_t c) {
      const auto& collective = plan.collectives[c];
      double t = collective.seconds;
      if (collective.jitter >= 0) {
        t *= std::max(1.0, samplers[collective.jitter].draw(splitmix64(comm_key + c)));
      }
      return collective.inter_node ? t * regime_slowdown : t;
    };
    // The same kernels at full clock: the slowest member's compute is the group's, and the
    // sums stand for the loops over chunks and collectives (also when the kernels are recorded,
    // so that watching a run does not change its times).
    const bool steady = !plan.kernel_noise && !m.thermal_;
    if (steady) {
      double communication_s = plan.steady_intra_s + plan.steady_inter_s * regime_slowdown;
      for (size_t c : plan.jittered) communication_s += collective_s(c);
      time.seconds +=
          plan.compute_sum_s * (max_slowdown * scale) + plan.idle_sum_s + communication_s;
      time.communication_s += communication_s;
      if (kernel_seconds == nullptr) continue;
    }
    chunk_max_.assign(chunks, 0.0);
    factors_.resize(count);
    if (kernel_seconds != nullptr) collective_at_.assign(plan.collectives.size(), 0);
    for (size_t i = 0; i < members; ++i) {
      const double inverse_clock = 1 / clock_[i];
      const double slowdown = unit.slowdown[i] * level_[i] * scale;
      if (plan.kernel_noise) {
        // Draw first, then add up: the sums stay in registers.
        const uint64_t key = splitmix64(unit.kernel_keys[i] + index * kGolden);
        for (size_t k = 0; k < count; ++k) {
          const int sampler = plan.sampler[k];
          factors_[k] = sampler >= 0 ? samplers[sampler].draw(kernel_word(key, k)) : 1.0;
        }
      }
      double busy = 0;
      size_t k = 0;
      for (size_t c = 0; c < chunks; ++c) {
        double clock_bound = plan.chunk_clock_s[c], other = plan.chunk_other_s[c];
        if (plan.kernel_noise) {
          clock_bound = other = 0;
          for (; k < plan.chunk_end[c]; ++k) {
            clock_bound += plan.clock_s[k] * factors_[k];
            other += plan.other_s[k] * factors_[k];
          }
        }
        const double t = (clock_bound * inverse_clock + other) * slowdown + plan.chunk_idle_s[c];
        busy += t;
        chunk_max_[c] = std::max(chunk_max_[c], t);
        if (kernel_seconds != nullptr) {
          record_chunk(plan, c, inverse_clock, slowdown, t, (*kernel_seconds)[i]);
        }
      }
      busy_[i] += busy;
    }
    if (!steady) {
      for (double t : chunk_max_) time.seconds += t;
    }
    for (size_t c = 0; c < plan.collectives.size(); ++c) {
      const double t = collective_s(c);
      if (!steady) {
        time.seconds += t;
        time.communication_s += t;
      }
      if (kernel_seconds != nullptr) {
        // A member waits in the collective for the slowest member's compute, then runs it.
        for (size_t i = 0; i < members; ++i) {
          auto& recorded = (*kernel_seconds)[i];
          const size_t at = collective_at_[c];
          recorded[at] = chunk_max_[c] - recorded[at] + t;
        }
      }
    }
  }
  // Waits for the host that a host ahead had already issued (idle, never varied) are not run.
  time.seconds = std::max(0.0, time.seconds - skipped_idle_s);
  if (m.thermal_ && time.seconds > 0) {
    for (size_t i = 0; i < members; ++i) {
      const double busy = std::min(1.0, busy_[i] / time.seconds);
      unit.temperature_c[i] = m.thermal_model_.advance(unit.temperature_c[i], unit.ambient_c[i],
                                                       time.seconds, busy, clock_[i]);
      peak_temperature_c_ = std::max(peak_temperature_c_, unit.temperature_c[i]);
    }
  }
  unit.updated_s = now_s + time.seconds;
  return time;
}

double RunVariation::collective_slowdown(GroupId group, CollectiveOp op, int position) {
  const VariationModel& m = model_;
  if (m.group_scope_.empty() || !m.group_scope_[group]) return 1.0;
  const int sampler = m.jitter_sampler(op, *m.group_scope_[group]);
  if (sampler < 0) return 1.0;
  auto& calls = calls_[group];
  if (calls.empty()) calls.assign(m.job_.groups[group].ranks.size(), 0);
  const uint64_t index = calls[static_cast<size_t>(position)]++;
  const uint64_t key = stream_key(seed_, Purpose::collective);
  double slowdown = 1.0;
  for (GroupId copy : m.group_copies_[group]) {
    slowdown = std::max(slowdown, m.samplers_[static_cast<size_t>(sampler)].draw(
                                      word(key, static_cast<uint64_t>(copy.value()), index)));
  }
  return slowdown;
}

double RunVariation::transfer_slowdown(int rank, int peer) {
  const VariationModel& m = model_;
  if (m.transfer_jitter_.empty()) return 1.0;
  const auto& gpu_of = m.job_.gpu_of_rank;
  const auto it = m.transfer_jitter_.find(
      m.topology_.scope_of({gpu_of[static_cast<size_t>(rank)], gpu_of[static_cast<size_t>(peer)]}));
  if (it == m.transfer_jitter_.end()) return 1.0;
  Unit& unit = units_[static_cast<size_t>(rank)];
  const uint64_t index = unit.transfers++;
  const uint64_t key = stream_key(seed_, Purpose::transfer);
  // The rank stands for its lockstep group: each member sends its own part; the slowest counts.
  double slowdown = 1.0;
  for (int gpu : unit.gpus) {
    slowdown = std::max(slowdown, m.samplers_[static_cast<size_t>(it->second)].draw(
                                      word(key, static_cast<uint64_t>(gpu), index)));
  }
  return slowdown;
}

double RunVariation::regime(int step) const {
  const auto& cdf = model_.regime_cdf_;
  if (cdf.empty()) return 1.0;
  const double u = uniform(word(stream_key(seed_, Purpose::regime), static_cast<uint64_t>(step)));
  size_t i = 0;
  while (i + 1 < cdf.size() && u >= cdf[i]) ++i;
  return model_.spec_.regimes[i].slowdown;
}

std::vector<std::pair<int, double>> RunVariation::wan_latencies() const {
  std::vector<std::pair<int, double>> out;
  if (model_.wan_rtt_ < 0) return out;
  const Topology& topology = model_.topology_;
  const int dcs = topology.datacenter_count();
  const uint64_t key = stream_key(seed_, Purpose::wan_rtt);
  for (int a = 0; a < dcs; ++a) {
    for (int b = a + 1; b < dcs; ++b) {
      if (topology.wan_link(a, b) < 0) continue;
      const double rtt_s = model_.samplers_[static_cast<size_t>(model_.wan_rtt_)].draw(
          word(key, static_cast<uint64_t>(a * dcs + b)));
      out.emplace_back(topology.wan_link(a, b), rtt_s / 2);
      out.emplace_back(topology.wan_link(b, a), rtt_s / 2);
    }
  }
  return out;
}

}  // namespace prismsim
