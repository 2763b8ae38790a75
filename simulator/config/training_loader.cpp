#include "config/training_loader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "config/map_reader.hpp"
#include "config/scenario.hpp"
#include "config/variability_loader.hpp"
#include "core/text.hpp"
#include "core/units.hpp"

namespace prismsim {
namespace {

const std::vector<std::string> kUnits = {"gpu", "node", "nic", "switch", "rack", "job"};
const std::vector<std::string> kEffects = {"crash", "degrade", "planned"};

bool looks_non_finite(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text.find("inf") != std::string::npos || text.find("nan") != std::string::npos;
}

std::optional<DistributionSpec> time_distribution_at(MapReader& r, std::string_view key) {
  const ConfigNode* node = r.get(key, false);
  if (node == nullptr) return std::nullopt;
  return read_duration_distribution(*node, r.path_of(key), r.diags());
}

/// A failure rate per unit written "NUMBER/DURATION" ("4.7e-4/d", "1/1000h"), per second.
std::optional<double> read_rate(const ConfigNode& node, const std::string& path,
                                Diagnostics& diags) {
  const std::string example = "(failures per unit and time, e.g. '4.7e-4/d' or '1/5000h')";
  if (!node.is_scalar()) {
    diags.error(node.loc, fmt::format("'{}' must be a rate {}", path, example));
    return std::nullopt;
  }
  const std::string& text = node.scalar;
  const size_t slash = text.find('/');
  const std::string count = text.substr(0, slash);
  const auto value = parse_number(count);
  if ((value && !std::isfinite(*value)) || (!value && looks_non_finite(count))) {
    diags.error(node.loc, fmt::format("'{}' must be finite, got '{}'", path, text));
    return std::nullopt;
  }
  if (!value || slash == std::string::npos) {
    diags.error(node.loc, fmt::format("'{}' must be a rate {}, got '{}'", path, example, text));
    return std::nullopt;
  }
  if (*value < 0) {
    diags.error(node.loc, fmt::format("'{}' must not be negative, got '{}'", path, text));
    return std::nullopt;
  }
  std::string per = text.substr(slash + 1);
  if (!per.empty() && (std::isdigit(static_cast<unsigned char>(per.front())) || per[0] == '.')) {
    // "1/1000h"
  } else {
    per = "1" + per;
  }
  std::string reason;
  const auto seconds = units::parse_duration(per, &reason);
  if (!seconds || *seconds <= 0) {
    diags.error(node.loc, fmt::format("'{}': expected a time after '/' (ns, us, ms, s, min, h, d; "
                                      "e.g. '/d' or '/1000h'), got '{}'",
                                      path, text));
    return std::nullopt;
  }
  return *value / *seconds;
}

FailureComponentSpec read_component(const ConfigNode& node, const std::string& path,
                                    Diagnostics& diags) {
  FailureComponentSpec c;
  c.loc = node.loc;
  MapReader r(node, path, diags);
  assign(c.name, r.string("name", true));
  assign(c.per, r.choice("per", true, kUnits));
  const ConfigNode* rate = r.get("rate", false);
  const ConfigNode* mtbf = r.get("mtbf", false);
  if ((rate != nullptr) == (mtbf != nullptr) && r.valid()) {
    diags.error(node.loc, fmt::format("'{}' needs one of 'rate' (per unit, e.g. '4.7e-4/d') and "
                                      "'mtbf' (per unit, e.g. '2100d')",
                                      path));
  } else if (rate != nullptr) {
    assign(c.rate_per_unit_s, read_rate(*rate, r.path_of("rate"), diags));
  } else if (mtbf != nullptr) {
    if (auto m = r.positive_quantity("mtbf", true, units::parse_duration)) {
      c.rate_per_unit_s = 1 / *m;
    }
  }
  assign(c.effect, r.choice("effect", false, kEffects));
  if (const ConfigNode* down = r.get("nodes_down", false)) {
    if (c.effect == FailureEffect::degrade) {
      diags.error(down->loc, fmt::format("'{}' does not apply to effect 'degrade' (a degrading "
                                         "GPU's node is removed when it is detected)",
                                         r.path_of("nodes_down")));
    }
    assign(c.nodes_down, r.integer("nodes_down", false, 0));
  }
  if (auto d = time_distribution_at(r, "detect")) {
    c.has_detect = true;
    c.detect_s = *d;
  }
  if (const ConfigNode* slowdown = r.get("slowdown", c.effect == FailureEffect::degrade)) {
    if (c.effect != FailureEffect::degrade) {
      diags.error(slowdown->loc,
                  fmt::format("'{}' applies to effect 'degrade' only", r.path_of("slowdown")));
    } else {
      c.slowdown = read_distribution_spec(*slowdown, r.path_of("slowdown"), limits::kFactor, diags);
    }
  }
  if (c.effect == FailureEffect::degrade && !c.has_detect && r.valid()) {
    diags.error(node.loc, fmt::format("'{}' needs 'detect': how long a degrading GPU slows the "
                                      "job before it is found",
                                      path));
  }
  r.finish();
  return c;
}

void read_failures(MapReader& parent, ResilienceSpec& s) {
  const ConfigNode* node = parent.map("failures", false);
  if (node == nullptr) return;
  MapReader r(*node, parent.path_of("failures"), parent.diags());
  if (const ConfigNode* scale = r.get("scale", false)) {
    const auto v = scale->is_scalar() ? parse_number(scale->scalar) : std::nullopt;
    if (!v || !std::isfinite(*v) || *v < 0) {
      r.diags().error(scale->loc, fmt::format("'{}' must be a finite number at least 0, got '{}'",
                                              r.path_of("scale"), scale->scalar));
    } else {
      s.rate_scale = *v;
    }
  }
  std::set<std::string> names;
  if (const ConfigNode* list = r.list("components", true)) {
    for (size_t i = 0; i < list->items.size(); ++i) {
      FailureComponentSpec c = read_component(
          list->items[i], fmt::format("{}.{}", r.path_of("components"), i), r.diags());
      if (!c.name.empty() && !names.insert(c.name).second) {
        r.diags().error(list->items[i].loc,
                        fmt::format("failure component name '{}' is used twice", c.name));
      }
      s.components.push_back(std::move(c));
    }
  }
  r.finish();
}

void read_recovery(MapReader& parent, ResilienceSpec& s) {
  const ConfigNode* node = parent.map("recovery", false);
  if (node == nullptr) return;
  MapReader r(*node, parent.path_of("recovery"), parent.diags());
  assign(s.detect_s, time_distribution_at(r, "detect"));
  assign(s.restart_s, time_distribution_at(r, "restart"));
  if (const ConfigNode* spares = r.get("spares", false)) s.spares_loc = spares->loc;
  assign(s.spares, r.integer("spares", false, 0));
  assign(s.replacement_s, time_distribution_at(r, "replacement"));
  if (const ConfigNode* elastic = r.map("elastic", false)) {
    s.elastic_loc = elastic->loc;
    MapReader e(*elastic, r.path_of("elastic"), r.diags());
    if (const ConfigNode* list = e.list("replicas", true)) {
      if (list->items.empty()) {
        r.diags().error(list->loc, fmt::format("'{}' is empty", e.path_of("replicas")));
      }
      for (const ConfigNode& item : list->items) {
        const auto v = item.is_scalar() ? parse_number(item.scalar) : std::nullopt;
        if (!v || *v < 1 || *v != std::floor(*v) || *v > 1e9) {
          r.diags().error(item.loc, fmt::format("'{}' must list whole numbers of replicas, at "
                                                "least 1",
                                                e.path_of("replicas")));
          continue;
        }
        s.elastic_replicas.push_back(static_cast<int>(*v));
      }
      if (!std::is_sorted(s.elastic_replicas.rbegin(), s.elastic_replicas.rend()) ||
          std::adjacent_find(s.elastic_replicas.begin(), s.elastic_replicas.end()) !=
              s.elastic_replicas.end()) {
        r.diags().error(list->loc, fmt::format("'{}' must list sizes from the largest down, "
                                               "each once",
                                               e.path_of("replicas")));
      }
    }
    e.finish();
  }
  r.finish();
}

void read_checkpoint(MapReader& parent, ResilienceSpec& s) {
  const ConfigNode* node = parent.map("checkpoint", false);
  if (node == nullptr) return;
  MapReader r(*node, parent.path_of("checkpoint"), parent.diags());
  Diagnostics& diags = r.diags();
  CheckpointSpec& c = s.checkpoint;
  c.enabled = true;
  if (const ConfigNode* interval = r.get("interval", true)) {
    c.interval_loc = interval->loc;
    const std::string path = r.path_of("interval");
    const auto steps = interval->is_scalar() ? parse_number(interval->scalar) : std::nullopt;
    if (steps) {
      if (!std::isfinite(*steps) || *steps < 1) {
        diags.error(interval->loc, fmt::format("'{}' must be at least one step, got '{}'", path,
                                               interval->scalar));
      } else if (*steps != std::floor(*steps) || *steps > 1e15) {
        diags.error(interval->loc, fmt::format("'{}' must be a whole number of steps or a "
                                               "duration such as '30min', got '{}'",
                                               path, interval->scalar));
      } else {
        c.interval_steps = static_cast<int64_t>(*steps);
      }
    } else if (auto seconds = read_quantity(*interval, path, units::parse_duration, diags)) {
      if (*seconds <= 0) {
        diags.error(interval->loc,
                    fmt::format("'{}' must be positive, got '{}'", path, interval->scalar));
      } else {
        c.interval_s = *seconds;
      }
    }
  }
  for (const char* key : {"write_bandwidth", "read_bandwidth", "load_time"}) r.get(key, false);
  const bool by_size = r.get("size", false) != nullptr;
  const bool by_time = r.get("write_time", false) != nullptr;
  if (by_size == by_time && r.valid()) {
    diags.error(node->loc, fmt::format("'{}' needs one of 'size' (with 'write_bandwidth') and "
                                       "'write_time'",
                                       r.path()));
  }
  if (by_size) {
    assign(c.size_bytes, r.positive_quantity("size", true, units::parse_bytes));
    assign(c.write_Bps, r.quantity("write_bandwidth", true, units::parse_bandwidth));
    c.read_Bps = c.write_Bps;
    assign(c.read_Bps, r.quantity("read_bandwidth", false, units::parse_bandwidth));
    if (c.write_Bps > 0) c.write_s = c.size_bytes / c.write_Bps;
    if (c.read_Bps > 0) c.load_s = c.size_bytes / c.read_Bps;
    for (const char* key : {"load_time"}) {
      if (const ConfigNode* n = r.get(key, false)) {
        diags.error(n->loc, fmt::format("'{}' applies with 'write_time'; with 'size' give "
                                        "'read_bandwidth'",
                                        r.path_of(key)));
      }
    }
  } else if (by_time) {
    assign(c.write_s, r.quantity("write_time", true, units::parse_duration));
    c.load_s = c.write_s;
    assign(c.load_s, r.quantity("load_time", false, units::parse_duration));
    for (const char* key : {"write_bandwidth", "read_bandwidth"}) {
      if (const ConfigNode* n = r.get(key, false)) {
        diags.error(n->loc, fmt::format("'{}' applies with 'size'", r.path_of(key)));
      }
    }
  }
  if (auto mode = r.choice("mode", false, {"sync", "async"})) c.async = *mode == 1;
  for (const char* key : {"snapshot", "async_slowdown"}) {
    if (const ConfigNode* n = r.get(key, false); n != nullptr && !c.async) {
      diags.error(n->loc, fmt::format("'{}' applies to 'mode: async' only", r.path_of(key)));
    }
  }
  if (c.async) {
    assign(c.snapshot_s, r.quantity("snapshot", false, units::parse_duration));
    assign(c.async_slowdown, r.number("async_slowdown", false, 1.0, false));
  }
  r.finish();
}

}  // namespace

const char* to_string(FailureUnit unit) { return kUnits[static_cast<size_t>(unit)].c_str(); }
const char* to_string(FailureEffect effect) {
  return kEffects[static_cast<size_t>(effect)].c_str();
}

void resolve_training_includes(ConfigNode& root, Diagnostics& diags) {
  resolve_includes(root, {"resilience"}, diags);
  if (ConfigNode* resilience = root.find("resilience")) {
    resolve_includes(*resilience, {"failures"}, diags);
  }
}

TrainLengthSpec read_train_length(const ConfigNode& node, const std::string& path,
                                  Diagnostics& diags) {
  TrainLengthSpec t;
  t.loc = node.loc;
  MapReader r(node, path, diags);
  int given = 0;
  for (const char* key : {"steps", "tokens", "until"}) given += r.get(key, false) != nullptr;
  if (given != 1 && r.valid()) {
    diags.error(node.loc,
                fmt::format("'{}' needs exactly one of 'steps', 'tokens' and 'until'", path));
  }
  if (const ConfigNode* steps = r.get("steps", false)) {
    if (auto v = r.quantity("steps", false, units::parse_count)) {
      if (*v < 1) {
        diags.error(steps->loc, fmt::format("'{}' must be at least 1, got '{}'", r.path_of("steps"),
                                            steps->scalar));
      } else if (*v != std::floor(*v) || *v > 1e15) {
        diags.error(steps->loc, fmt::format("'{}' must be a whole number, got '{}'",
                                            r.path_of("steps"), steps->scalar));
      } else {
        t.kind = TrainLengthSpec::Kind::steps;
        t.steps = static_cast<int64_t>(*v);
      }
    }
  }
  if (auto tokens = r.positive_quantity("tokens", false, units::parse_count)) {
    if (*tokens > 1e18) {
      diags.error(r.get("tokens", false)->loc,
                  fmt::format("'{}' must be at most 1e18, got {}", r.path_of("tokens"), *tokens));
    } else {
      t.kind = TrainLengthSpec::Kind::steps;
      t.tokens = *tokens;
    }
  }
  if (auto until = r.positive_quantity("until", false, units::parse_duration)) {
    t.kind = TrainLengthSpec::Kind::until;
    t.until_s = *until;
  }
  assign(t.replications, r.integer("replications", false, 1, 10'000'000));
  if (const ConfigNode* list = r.list("deadlines", false)) {
    for (const auto& item : list->items) {
      std::string reason;
      const auto d = item.is_scalar() ? units::parse_deadline(item.scalar, &reason) : std::nullopt;
      if (!d || d->multiple > 1e6) {
        diags.error(item.loc, fmt::format("'{}' items must be positive durations ('60d') or "
                                          "multiples of the failure-free time up to 1e6 ('1.1x')",
                                          r.path_of("deadlines")));
      } else if (d->multiple > 0) {
        t.relative_deadlines.push_back(d->multiple);
      } else {
        t.deadlines_s.push_back(d->seconds);
      }
    }
    if (t.kind == TrainLengthSpec::Kind::until && !list->items.empty()) {
      diags.error(list->loc, fmt::format("'{}' needs a run length in steps or tokens (an 'until' "
                                         "run's length is fixed)",
                                         r.path_of("deadlines")));
    }
  }
  r.finish();
  return t;
}

ResilienceSpec read_resilience(const ConfigNode& node, Diagnostics& diags) {
  ResilienceSpec s;
  if (node.kind == ConfigNode::Kind::Null) return s;
  s.present = true;
  s.loc = node.loc;
  MapReader r(node, "resilience", diags);
  if (!node.is_map()) return s;  // reported by the reader
  read_failures(r, s);
  read_recovery(r, s);
  read_checkpoint(r, s);
  r.finish();
  return s;
}

void check_training(Scenario& s, Diagnostics& diags) {
  TrainLengthSpec& t = s.train;
  const ResilienceSpec& res = s.resilience;
  if (res.present && !t.active()) {
    diags.error(res.loc,
                "'resilience' needs a run length: 'simulation.train' with 'steps', "
                "'tokens' or 'until'");
  }
  if (t.tokens > 0) {
    if (s.workload.kind != WorkloadKind::transformer) {
      diags.error(t.loc,
                  "'simulation.train.tokens' needs a transformer workload (a layer stack "
                  "has no sequence length); give 'steps'");
    } else {
      const double per_step = static_cast<double>(s.workload.global_batch) *
                              static_cast<double>(s.workload.model.sequence);
      t.steps = static_cast<int64_t>(std::ceil(t.tokens / per_step));
    }
  }
  if (!res.present) return;
  const int per_node = s.platform.gpus_per_node;
  const int ranks = s.parallelism.ranks();
  const int job_nodes = (ranks + per_node - 1) / per_node;
  const int platform_nodes = s.platform.total_gpus() / per_node;
  if (res.spares > platform_nodes - job_nodes) {
    diags.error(res.spares_loc,
                fmt::format("'resilience.recovery.spares' is {} nodes, but platform '{}' has {} "
                            "nodes and the job uses {}: at most {} can be spares (give the "
                            "platform more nodes)",
                            res.spares, s.platform.name, platform_nodes, job_nodes,
                            std::max(0, platform_nodes - job_nodes)));
  }
  if (!res.elastic_replicas.empty()) {
    const int per_replica = ranks / s.parallelism.dp;
    if (per_replica % per_node != 0) {
      diags.error(res.elastic_loc,
                  fmt::format("'resilience.recovery.elastic' needs whole nodes per data-parallel "
                              "replica; a replica here has {} GPU(s), on nodes of {}",
                              per_replica, per_node));
    }
    if (res.elastic_replicas.front() >= s.parallelism.dp) {
      diags.error(res.elastic_loc,
                  fmt::format("'resilience.recovery.elastic.replicas' must be smaller than the "
                              "job's dp {}, got {}",
                              s.parallelism.dp, res.elastic_replicas.front()));
    }
  }
}

}  // namespace prismsim
