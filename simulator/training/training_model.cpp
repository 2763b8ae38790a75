#include "training/training_model.hpp"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <limits>
#include <queue>
#include <thread>
#include <utility>

#include "core/seeds.hpp"
#include "training/random_streams.hpp"

namespace prismsim {
namespace {

namespace rnd = training_random;
constexpr double kInf = std::numeric_limits<double>::infinity();

/// The streams of one replication, one per purpose.
enum class Purpose : uint64_t {
  arrival_gap = 1,
  arrival_component,
  arrival_thinning,
  detection,
  replacement,
  slowdown,
  restart,
  step_sums,
  allocation,
};

/// A component as the replications use it.
struct Component {
  FailureEffect effect = FailureEffect::crash;
  bool scales_with_size = true;  ///< false for per-job components
  int nodes_down = 0;
  Sampler detect_s;
  Sampler slowdown;
};

/// What every replication of a plan shares, built once.
struct Model {
  const TrainingPlan* plan = nullptr;
  std::vector<Component> components;
  std::vector<double> cumulative_share;  ///< of the total rate, to pick a component
  double total_rate_per_s = 0;
  Sampler restart_s, replacement_s;
  std::vector<StepTimeModel> sizes;
  std::vector<int> size_nodes;  ///< nodes each size runs on
  std::vector<int64_t> size_replicas;
  int64_t interval_steps = 0;  ///< 0: no checkpoints
  int pool_nodes = 0;          ///< the job's nodes and the hot spares
  int64_t goal_work = 0;       ///< steps runs: replica-steps to do (steps x full replicas)
  double until_s = 0;          ///< until runs: the length
  double cap_s = kInf;         ///< steps runs: give up (unfinished) past this wall time
};

Model build_model(const TrainingPlan& plan) {
  Model m;
  m.plan = &plan;
  const ResilienceSpec& r = plan.resilience;
  const FailureRates rates = failure_rates(plan);
  m.total_rate_per_s = rates.total_per_s;
  double cumulative = 0;
  for (size_t i = 0; i < r.components.size(); ++i) {
    const FailureComponentSpec& spec = r.components[i];
    Component c;
    c.effect = spec.effect;
    c.scales_with_size = spec.per != FailureUnit::job;
    c.nodes_down = spec.effect == FailureEffect::degrade ? 1
                   : spec.nodes_down >= 0                ? spec.nodes_down
                                                         : plan.shape.nodes_down(spec.per);
    c.detect_s = Sampler(spec.has_detect ? spec.detect_s : r.detect_s);
    c.slowdown = Sampler(spec.slowdown);
    m.components.push_back(std::move(c));
    cumulative += rates.job_rate_per_s[i];
    m.cumulative_share.push_back(rates.total_per_s > 0 ? cumulative / rates.total_per_s : 0);
  }
  if (!m.cumulative_share.empty()) m.cumulative_share.back() = 1;
  m.restart_s = Sampler(r.restart_s);
  m.replacement_s = Sampler(r.replacement_s);
  // The full size, then the elastic ones the plan allows.
  assert(plan.sizes.size() >= 1 + r.elastic_replicas.size());
  for (size_t i = 0; i <= r.elastic_replicas.size(); ++i) {
    const StepTimeSet& set = plan.sizes[i];
    m.sizes.emplace_back(set);
    m.size_replicas.push_back(set.replicas);
    // Whole nodes: a size needs ceil(replicas x nodes / full replicas) of them.
    const int64_t full = plan.shape.replicas;
    const int64_t nodes = static_cast<int64_t>(set.replicas) * plan.shape.nodes;
    m.size_nodes.push_back(static_cast<int>((nodes + full - 1) / full));
  }
  m.interval_steps = checkpoint_interval_steps(plan);
  m.pool_nodes = plan.shape.nodes + r.spares;
  if (plan.length.kind == TrainLengthSpec::Kind::until) {
    m.until_s = plan.length.until_s;
  } else {
    m.goal_work = plan.length.steps * plan.shape.replicas;
    // A run that takes a thousand times its failure-free length is reported unfinished.
    m.cap_s =
        1000.0 * static_cast<double>(plan.length.steps) * m.sizes.front().mean_step_s() + 86400.0;
  }
  return m;
}

/// Time spent and work done, not yet known to be kept (a pending bucket) or kept.
struct Bucket {
  std::array<double, kTimeCauses> time_s{};
  int64_t steps = 0;
  int64_t work = 0;  ///< replica-steps

  double total_s() const {
    double sum = 0;
    for (double t : time_s) sum += t;
    return sum;
  }
  void add(const Bucket& other) {
    for (int i = 0; i < kTimeCauses; ++i) time_s[i] += other.time_s[i];
    steps += other.steps;
    work += other.work;
  }
};

double& at(Bucket& b, TimeCause cause) { return b.time_s[static_cast<size_t>(cause)]; }

/// The discrete-event simulation of one replication of the whole run.
class Replication {
 public:
  Replication(const Model& model, int replication)
      : m_(model),
        spec_(model.plan->resilience),
        seed_(run_seed(model.plan->seed, static_cast<uint64_t>(replication))) {
    out_.replication = replication;
    out_.seed = seed_;
    out_.failures_by_component.assign(m_.components.size(), 0);
  }

  ReplicationOutcome run();

 private:
  enum class Phase { running, stall, detecting, waiting, restarting };
  /// What a stall (training stopped, the time counted as checkpointing) is for.
  enum class Stall { sync_write, snapshot, previous_write, planned_write };
  struct Degradation {
    double slowdown = 1;
    double detect_at_s = kInf;
    uint64_t failure = 0;
    bool detected = false;
  };

  uint64_t key(Purpose purpose) const { return rnd::stream(seed_, static_cast<uint64_t>(purpose)); }
  uint64_t draw(Purpose purpose, uint64_t index) const { return rnd::word(key(purpose), index); }

  /// Wall time per second of steps at full speed.
  double factor() const {
    return degrade_factor_ * (writing_ ? spec_.checkpoint.async_slowdown : 1);
  }
  double phase_end_s() const;
  void advance(double t);
  void start_segment();
  void new_allocation();
  void commit(Bucket& bucket) {
    committed_.add(bucket);
    bucket = Bucket{};
  }
  void lose_pending();
  void begin_stall(Stall kind, double duration_s);
  void begin_checkpoint();
  void begin_planned_checkpoint();
  void begin_restart();
  void request_drain();
  void after_durable_checkpoint();
  bool can_grow() const;
  void remove_nodes(int nodes, uint64_t failure);
  void update_degradation();
  void schedule_next_arrival();

  void on_phase_end();
  void on_write_end();
  void on_repair();
  void on_detection();
  void on_arrival();
  void finish(bool finished);

  const Model& m_;
  const ResilienceSpec& spec_;
  const uint64_t seed_;
  ReplicationOutcome out_;
  bool done_ = false;

  double now_ = 0;
  Phase phase_ = Phase::running;
  Stall stall_ = Stall::sync_write;
  double phase_end_ = kInf;  ///< stall, detecting, restarting

  Bucket committed_;  ///< kept
  Bucket awaiting_;   ///< snapshot taken, its asynchronous write in progress
  Bucket current_;    ///< since the last snapshot

  int64_t segment_steps_ = 0;  ///< steps of the segment under way (to the next checkpoint)
  double segment_base_s_ = 0;  ///< their duration at full speed
  double segment_done_s_ = 0;  ///< of it, done
  bool segment_drains_ = false;
  bool drain_requested_ = false;

  int level_ = 0;  ///< index of the job size (0: full)
  int run_ = 0;    ///< the simulated run the allocation follows
  bool nodes_changed_ = false;
  int healthy_ = 0;  ///< nodes in service or ready (job and spares)
  std::priority_queue<std::pair<double, int>, std::vector<std::pair<double, int>>, std::greater<>>
      repairs_;

  bool writing_ = false;
  double write_end_s_ = kInf;

  std::vector<Degradation> degradations_;
  double degrade_factor_ = 1;

  uint64_t arrivals_ = 0;
  double next_arrival_s_ = kInf;
  uint64_t restarts_ = 0, segments_ = 0, allocations_ = 0;
  uint64_t events_ = 0;
};

double Replication::phase_end_s() const {
  switch (phase_) {
    case Phase::running:
      return now_ + (segment_base_s_ - segment_done_s_) * factor();
    case Phase::waiting:
      return kInf;
    default:
      return phase_end_;
  }
}

void Replication::advance(double t) {
  const double dt = t - now_;
  if (dt > 0) {
    switch (phase_) {
      case Phase::running: {
        const double base = dt / factor();
        const double useful = base *
                              static_cast<double>(m_.size_replicas[static_cast<size_t>(level_)]) /
                              static_cast<double>(m_.size_replicas.front());
        at(current_, TimeCause::useful) += useful;
        at(current_, TimeCause::reduced_replicas) += base - useful;
        at(current_, TimeCause::slow) += base * (degrade_factor_ - 1);
        at(current_, TimeCause::checkpoint) += dt - base * degrade_factor_;
        segment_done_s_ = std::min(segment_base_s_, segment_done_s_ + base);
        break;
      }
      case Phase::stall:
        at(current_, TimeCause::checkpoint) += dt;
        break;
      case Phase::detecting:
        at(committed_, TimeCause::detection) += dt;
        break;
      case Phase::restarting:
        at(committed_, TimeCause::restart) += dt;
        break;
      case Phase::waiting:
        at(committed_, TimeCause::waiting_for_spares) += dt;
        break;
    }
  }
  now_ = t;
}

void Replication::new_allocation() {
  const StepTimeModel& model = m_.sizes[static_cast<size_t>(level_)];
  const uint64_t w = draw(Purpose::allocation, allocations_++);
  __extension__ using Wide = unsigned __int128;
  run_ = static_cast<int>((static_cast<Wide>(w) * static_cast<uint64_t>(model.runs())) >> 64);
}

void Replication::start_segment() {
  const StepTimeModel& model = m_.sizes[static_cast<size_t>(level_)];
  const int64_t replicas = m_.size_replicas[static_cast<size_t>(level_)];
  constexpr int64_t kMaxSegment = int64_t{1} << 52;
  int64_t steps = m_.interval_steps > 0 ? m_.interval_steps : kMaxSegment;
  if (m_.goal_work > 0) {
    const int64_t left = m_.goal_work - committed_.work - awaiting_.work - current_.work;
    steps = std::min(steps, (left + replicas - 1) / replicas);
  } else if (m_.interval_steps == 0) {
    // An `until` run without checkpoints: enough steps to reach its end.
    const double left_s = std::max(0.0, m_.until_s - now_);
    steps =
        std::min(kMaxSegment, static_cast<int64_t>(std::ceil(left_s / model.run_min_s(run_))) + 1);
  }
  assert(steps >= 1);
  segment_steps_ = steps;
  segment_base_s_ = model.sum_steps(run_, steps, draw(Purpose::step_sums, segments_++));
  segment_done_s_ = 0;
  segment_drains_ = false;
}

void Replication::lose_pending() {
  Bucket lost;
  at(lost, TimeCause::lost_work) = current_.total_s() + awaiting_.total_s();
  current_ = Bucket{};
  awaiting_ = Bucket{};
  committed_.add(lost);
  writing_ = false;
  write_end_s_ = kInf;
}

void Replication::begin_stall(Stall kind, double duration_s) {
  phase_ = Phase::stall;
  stall_ = kind;
  phase_end_ = now_ + duration_s;
}

void Replication::begin_checkpoint() {
  const CheckpointSpec& c = spec_.checkpoint;
  if (!c.async) {
    begin_stall(Stall::sync_write, c.write_s);
  } else if (writing_) {
    begin_stall(Stall::previous_write, write_end_s_ - now_);
  } else {
    begin_stall(Stall::snapshot, c.snapshot_s);
  }
}

void Replication::begin_planned_checkpoint() {
  drain_requested_ = false;
  if (!spec_.checkpoint.enabled) {
    // Nothing can be saved: the progress is lost as at a crash.
    lose_pending();
    begin_restart();
    return;
  }
  // A synchronous write of the current state supersedes an asynchronous one under way.
  writing_ = false;
  write_end_s_ = kInf;
  begin_stall(Stall::planned_write, spec_.checkpoint.write_s);
}

bool Replication::can_grow() const {
  for (int i = 0; i < level_; ++i) {
    if (m_.size_nodes[static_cast<size_t>(i)] <= healthy_) return true;
  }
  return false;
}

void Replication::after_durable_checkpoint() {
  ++out_.checkpoints;
  if (level_ > 0 && can_grow()) {
    ++out_.planned_restarts;
    request_drain();
  }
}

void Replication::request_drain() {
  drain_requested_ = true;
  if (phase_ == Phase::running && !segment_drains_) {
    // Stop at the end of the step under way: steps are exchangeable within the segment, so the
    // step boundaries split its duration evenly (on average) and the first n + 1 steps take
    // (n + 1) / K of it.
    const double k = static_cast<double>(segment_steps_);
    const int64_t done = std::min<int64_t>(
        segment_steps_ - 1, static_cast<int64_t>(k * segment_done_s_ / segment_base_s_));
    const int64_t keep = done + 1;
    if (keep < segment_steps_) {
      segment_base_s_ = segment_base_s_ * static_cast<double>(keep) / k;
      segment_done_s_ = std::min(segment_done_s_, segment_base_s_);
      segment_steps_ = keep;
    }
    segment_drains_ = true;
  } else if (phase_ != Phase::running && phase_ != Phase::stall) {
    drain_requested_ = false;  // already stopped: the restart under way takes care of it
  }
}

void Replication::update_degradation() {
  degrade_factor_ = 1;
  for (const Degradation& d : degradations_) {
    degrade_factor_ = std::max(degrade_factor_, d.slowdown);
  }
}

void Replication::remove_nodes(int nodes, uint64_t failure) {
  nodes = std::min(nodes, healthy_);
  if (nodes <= 0) return;
  healthy_ -= nodes;
  nodes_changed_ = true;
  repairs_.emplace(now_ + m_.replacement_s.draw(draw(Purpose::replacement, failure)), nodes);
}

void Replication::begin_restart() {
  drain_requested_ = false;
  segment_drains_ = false;
  writing_ = false;
  write_end_s_ = kInf;
  std::erase_if(degradations_, [](const Degradation& d) { return d.detected; });
  update_degradation();
  int level = -1;
  for (size_t i = 0; i < m_.size_nodes.size(); ++i) {
    if (m_.size_nodes[i] <= healthy_) {
      level = static_cast<int>(i);
      break;
    }
  }
  if (level < 0) {
    phase_ = Phase::waiting;
    return;
  }
  if (level != level_) nodes_changed_ = true;
  level_ = level;
  if (level_ > 0) ++out_.elastic_restarts;
  const bool has_checkpoint = spec_.checkpoint.enabled && committed_.work > 0;
  phase_ = Phase::restarting;
  phase_end_ = now_ + m_.restart_s.draw(draw(Purpose::restart, restarts_++)) +
               (has_checkpoint ? spec_.checkpoint.load_s : 0);
}

void Replication::on_phase_end() {
  switch (phase_) {
    case Phase::running: {
      segment_done_s_ = segment_base_s_;
      current_.steps += segment_steps_;
      current_.work += segment_steps_ * m_.size_replicas[static_cast<size_t>(level_)];
      if (m_.goal_work > 0 && committed_.work + awaiting_.work + current_.work >= m_.goal_work) {
        finish(true);
      } else if (segment_drains_) {
        begin_planned_checkpoint();
      } else if (m_.interval_steps > 0) {
        begin_checkpoint();
      } else {
        start_segment();
      }
      return;
    }
    case Phase::stall:
      switch (stall_) {
        case Stall::sync_write:
          commit(awaiting_);
          commit(current_);
          after_durable_checkpoint();
          if (drain_requested_) {
            begin_restart();
          } else {
            phase_ = Phase::running;
            start_segment();
          }
          return;
        case Stall::previous_write:
          // (The write's end was handled first.)
          if (drain_requested_) {
            begin_planned_checkpoint();
          } else {
            begin_stall(Stall::snapshot, spec_.checkpoint.snapshot_s);
          }
          return;
        case Stall::snapshot:
          if (drain_requested_) {
            begin_planned_checkpoint();
            return;
          }
          awaiting_.add(current_);
          current_ = Bucket{};
          writing_ = true;
          write_end_s_ = now_ + spec_.checkpoint.write_s;
          phase_ = Phase::running;
          start_segment();
          return;
        case Stall::planned_write:
          commit(awaiting_);
          commit(current_);
          ++out_.checkpoints;
          begin_restart();
          return;
      }
      return;
    case Phase::detecting:
      begin_restart();
      return;
    case Phase::restarting:
      if (m_.size_nodes[static_cast<size_t>(level_)] > healthy_) {
        begin_restart();  // nodes were lost during the restart
        return;
      }
      if (nodes_changed_) new_allocation();
      nodes_changed_ = false;
      phase_ = Phase::running;
      start_segment();
      return;
    case Phase::waiting:
      return;
  }
}

void Replication::on_write_end() {
  writing_ = false;
  write_end_s_ = kInf;
  commit(awaiting_);
  after_durable_checkpoint();
}

void Replication::on_repair() {
  healthy_ += repairs_.top().second;
  repairs_.pop();
  if (phase_ == Phase::waiting) begin_restart();
}

void Replication::on_detection() {
  Degradation* first = nullptr;
  for (Degradation& d : degradations_) {
    if (!d.detected && (first == nullptr || d.detect_at_s < first->detect_at_s)) first = &d;
  }
  first->detected = true;
  remove_nodes(1, first->failure);
  if (phase_ == Phase::running || phase_ == Phase::stall) {
    ++out_.planned_restarts;
    request_drain();
  } else {
    std::erase_if(degradations_, [](const Degradation& d) { return d.detected; });
    update_degradation();
  }
}

void Replication::schedule_next_arrival() {
  if (m_.total_rate_per_s <= 0) return;
  next_arrival_s_ += rnd::exponential(draw(Purpose::arrival_gap, arrivals_), m_.total_rate_per_s);
}

void Replication::on_arrival() {
  const uint64_t index = arrivals_++;
  schedule_next_arrival();
  const double pick = rnd::unit(draw(Purpose::arrival_component, index));
  const size_t c = static_cast<size_t>(
      std::upper_bound(m_.cumulative_share.begin(), m_.cumulative_share.end(), pick) -
      m_.cumulative_share.begin());
  const size_t which = std::min(c, m_.components.size() - 1);
  const Component& component = m_.components[which];
  // Failures hit a job that runs or restarts; a hung or waiting job takes no new ones. A smaller
  // job (elastic) has proportionally fewer units that can fail.
  if (phase_ == Phase::detecting || phase_ == Phase::waiting) return;
  if (component.scales_with_size && level_ > 0) {
    const double fraction = static_cast<double>(m_.size_nodes[static_cast<size_t>(level_)]) /
                            static_cast<double>(m_.size_nodes.front());
    if (rnd::unit(draw(Purpose::arrival_thinning, index)) >= fraction) return;
  }
  ++out_.failures_by_component[which];
  switch (component.effect) {
    case FailureEffect::crash:
      ++out_.interruptions;
      lose_pending();
      drain_requested_ = false;
      segment_drains_ = false;
      remove_nodes(component.nodes_down, index);
      phase_ = Phase::detecting;
      phase_end_ = now_ + component.detect_s.draw(draw(Purpose::detection, index));
      return;
    case FailureEffect::degrade: {
      ++out_.degradations;
      Degradation d;
      d.slowdown = std::max(1.0, component.slowdown.draw(draw(Purpose::slowdown, index)));
      d.detect_at_s = now_ + component.detect_s.draw(draw(Purpose::detection, index));
      d.failure = index;
      degradations_.push_back(d);
      update_degradation();
      return;
    }
    case FailureEffect::planned:
      if (phase_ == Phase::restarting) return;  // the restart under way absorbs it
      ++out_.planned_restarts;
      remove_nodes(component.nodes_down, index);
      request_drain();
      return;
  }
}

void Replication::finish(bool finished) {
  if (m_.goal_work == 0 && phase_ == Phase::running && segment_base_s_ > 0) {
    // An `until` run ends in the middle of a segment: the steps done so far count.
    const int64_t steps =
        std::min<int64_t>(segment_steps_, static_cast<int64_t>(static_cast<double>(segment_steps_) *
                                                               segment_done_s_ / segment_base_s_));
    current_.steps += steps;
    current_.work += steps * m_.size_replicas[static_cast<size_t>(level_)];
  }
  commit(awaiting_);
  commit(current_);
  out_.finished = finished;
  out_.wall_s = now_;
  out_.time_s = committed_.time_s;
  out_.steps_run = committed_.steps;
  out_.work_steps =
      static_cast<double>(committed_.work) / static_cast<double>(m_.size_replicas.front());
  done_ = true;
}

ReplicationOutcome Replication::run() {
  healthy_ = m_.pool_nodes;
  new_allocation();
  phase_ = Phase::running;
  start_segment();
  next_arrival_s_ = 0;
  if (m_.total_rate_per_s > 0) {
    schedule_next_arrival();
  } else {
    next_arrival_s_ = kInf;
  }
  constexpr uint64_t kMaxEvents = 100'000'000;
  while (!done_) {
    const double t_phase = phase_end_s();
    const double t_write = writing_ ? write_end_s_ : kInf;
    const double t_repair = repairs_.empty() ? kInf : repairs_.top().first;
    double t_detect = kInf;
    for (const Degradation& d : degradations_) {
      if (!d.detected) t_detect = std::min(t_detect, d.detect_at_s);
    }
    const double t_end = m_.goal_work > 0 ? m_.cap_s : m_.until_s;
    const double t = std::min({t_phase, t_write, t_repair, t_detect, next_arrival_s_, t_end});
    advance(t);
    if (t == t_end) {
      finish(m_.goal_work == 0);
    } else if (++events_ > kMaxEvents) {
      finish(false);
    } else if (t == t_write) {
      on_write_end();
    } else if (t == t_repair) {
      on_repair();
    } else if (t == t_phase) {
      on_phase_end();
    } else if (t == t_detect) {
      on_detection();
    } else {
      on_arrival();
    }
  }
  return out_;
}

}  // namespace

int64_t JobShape::units(FailureUnit per) const {
  switch (per) {
    case FailureUnit::gpu:
    case FailureUnit::nic:
      return static_cast<int64_t>(nodes) * gpus_per_node;
    case FailureUnit::node:
      return nodes;
    case FailureUnit::switch_:
      return switches;
    case FailureUnit::rack:
      return racks;
    case FailureUnit::job:
      return 1;
  }
  return 1;
}

int JobShape::nodes_down(FailureUnit per) const {
  switch (per) {
    case FailureUnit::gpu:
    case FailureUnit::nic:
    case FailureUnit::node:
      return 1;
    case FailureUnit::switch_:
      return nodes_per_switch;
    case FailureUnit::rack:
      return nodes_per_rack;
    case FailureUnit::job:
      return 0;
  }
  return 0;
}

const char* to_string(TimeCause cause) {
  switch (cause) {
    case TimeCause::useful:
      return "useful";
    case TimeCause::checkpoint:
      return "checkpoint";
    case TimeCause::lost_work:
      return "lost_work";
    case TimeCause::detection:
      return "detection";
    case TimeCause::restart:
      return "restart";
    case TimeCause::waiting_for_spares:
      return "waiting_for_spares";
    case TimeCause::slow:
      return "slow";
    case TimeCause::reduced_replicas:
      return "reduced_replicas";
  }
  return "?";
}

FailureRates failure_rates(const TrainingPlan& plan) {
  FailureRates rates;
  for (const FailureComponentSpec& c : plan.resilience.components) {
    const double rate = c.rate_per_unit_s * static_cast<double>(plan.shape.units(c.per)) *
                        plan.resilience.rate_scale;
    rates.job_rate_per_s.push_back(rate);
    rates.total_per_s += rate;
    if (c.effect != FailureEffect::degrade) rates.crash_per_s += rate;
  }
  return rates;
}

int64_t checkpoint_interval_steps(const TrainingPlan& plan) {
  const CheckpointSpec& c = plan.resilience.checkpoint;
  if (!c.enabled) return 0;
  if (c.interval_steps > 0) return c.interval_steps;
  const double mean = StepTimeModel(plan.sizes.front()).mean_step_s();
  return std::max<int64_t>(1, std::llround(c.interval_s / mean));
}

ReplicationOutcome simulate_replication(const TrainingPlan& plan, int replication) {
  const Model model = build_model(plan);
  return Replication(model, replication).run();
}

std::vector<ReplicationOutcome> simulate_training(const TrainingPlan& plan, int jobs) {
  const Model model = build_model(plan);
  const int count = plan.length.replications;
  std::vector<ReplicationOutcome> outcomes(static_cast<size_t>(count));
  std::atomic<int> next{0};
  auto work = [&] {
    for (int i = next++; i < count; i = next++) {
      outcomes[static_cast<size_t>(i)] = Replication(model, i).run();
    }
  };
  const int threads = std::clamp(jobs, 1, std::max(1, count));
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();
  return outcomes;
}

}  // namespace prismsim
