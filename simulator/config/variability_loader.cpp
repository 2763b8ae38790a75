#include "config/variability_loader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <sstream>

#include "config/map_reader.hpp"
#include "core/files.hpp"
#include "core/text.hpp"
#include "core/units.hpp"

namespace prismsim {
namespace {

constexpr double kAnyNumber = std::numeric_limits<double>::lowest();
/// A mixture's weights are normalised; this keeps their sum finite.
constexpr double kMaxMixtureWeight = 1e6;
const std::vector<std::string> kFamilies = {"normal",    "lognormal", "gamma",   "uniform",
                                            "empirical", "mixture",   "constant"};

DistributionSpec read_distribution(const ConfigNode& node, const std::string& path,
                                   const ValueRange& values, Diagnostics& diags);

/// Samples from a file: one number per line; blank lines and lines starting with '#' are skipped.
std::vector<double> read_sample_file(const ConfigNode& node, const std::string& path,
                                     Diagnostics& diags) {
  const std::string dir = parent_directory(*node.loc.file);
  const std::string file =
      dir.empty() || node.scalar.starts_with('/') ? node.scalar : dir + "/" + node.scalar;
  std::string reason;
  const auto text = read_file(file, &reason, kMaxConfigFileBytes);
  if (!text) {
    diags.error(node.loc, fmt::format("'{}': cannot read sample file {}: {}", path,
                                      quoted_path(file), reason));
    return {};
  }
  diags.read_input(file, *text);
  std::vector<double> samples;
  const auto shared = std::make_shared<const std::string>(file);
  std::istringstream in(*text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto fields = split_fields(line, ' ');
    if (fields.empty() || fields[0].starts_with('#')) continue;
    const auto value = fields.size() == 1 ? parse_number(fields[0]) : std::nullopt;
    if (!value || !std::isfinite(*value)) {
      diags.error(SourceLoc{shared, number, 1},
                  fmt::format("expected one number per line, got '{}'", line));
      return {};
    }
    samples.push_back(*value);
  }
  return samples;
}

/// The parameters of one family, from the map `r` (the value of the family's key). Its values
/// lie in `values`: every location parameter (mean, median, floor, shift, bounds, samples) in it,
/// spreads (stddev, scale) at most its upper end, a lognormal's sigma at most kMaxLogSigma.
void read_family(DistributionSpec& d, MapReader& r, const ValueRange& values) {
  using Family = DistributionSpec::Family;
  Diagnostics& diags = r.diags();
  const bool positive = values.min > 0;
  // Floors and shifts of positive laws may be 0; their draws still exceed it.
  const ValueRange offset{positive ? 0.0 : values.min, values.max, positive ? "0" : values.min_text,
                          values.max_text};
  const ValueRange spread{0, values.max, "0", values.max_text, true};
  const ValueRange sigma{0, limits::kMaxLogSigma, "0", "5", true};
  auto pick_one = [&](const std::vector<std::string>& keys) -> std::string {
    std::string found;
    for (const auto& key : keys) {
      if (r.get(key, false) == nullptr) continue;
      if (!found.empty()) {
        diags.error(r.loc(),
                    fmt::format("'{}' takes one of '{}' and '{}', not both", r.path(), found, key));
      }
      found = key;
    }
    if (found.empty()) {
      diags.error(r.loc(),
                  fmt::format("'{}' needs one of '{}'", r.path(), fmt::join(keys, "', '")));
    }
    return found;
  };
  switch (d.family) {
    case Family::normal: {
      assign(d.mean, r.number("mean", true, values));
      assign(d.stddev, r.number("stddev", true, spread));
      d.floor = positive ? 0.0 : -std::numeric_limits<double>::infinity();
      assign(d.floor, r.number("floor", false, offset));
      if (d.stddev > 0 && d.floor > d.mean + 3 * d.stddev) {
        diags.error(r.loc(), fmt::format("'{}': the floor {} leaves almost nothing of a normal "
                                         "of mean {} and stddev {}",
                                         r.path(), d.floor, d.mean, d.stddev));
      }
      break;
    }
    case Family::lognormal: {
      assign(d.sigma, r.number("sigma", true, sigma));
      assign(d.shift, r.number("shift", false, offset));
      const std::string by = pick_one({"mu", "median", "mean"});
      if (by == "mu") {
        if (const auto mu = r.number("mu", true, kAnyNumber, false)) {
          d.mu = *mu;
          const double median = std::exp(*mu) + d.shift;
          if (!(median >= values.min && median <= values.max)) {
            diags.error(r.get("mu", false)->loc,
                        fmt::format("'{}': the median e^mu + shift is {}, outside {} to {}",
                                    r.path(), median, values.min_text, values.max_text));
          }
        }
      } else if (!by.empty()) {
        const auto v = r.number(by, true, values);
        if (v && *v > d.shift) {
          d.mu = by == "median" ? std::log(*v - d.shift)
                                : std::log(*v - d.shift) - d.sigma * d.sigma / 2;
        } else if (v) {
          diags.error(r.get(by, false)->loc,
                      fmt::format("'{}' must exceed the shift", r.path_of(by)));
        }
      }
      break;
    }
    case Family::gamma: {
      assign(d.shape, r.number("shape", true, limits::kGammaShape));
      assign(d.shift, r.number("shift", false, offset));
      const std::string by = pick_one({"scale", "mean"});
      if (by == "scale") {
        assign(d.scale, r.number("scale", true, spread));
        if (d.scale > 0 && d.shape > 0 && !(d.shape * d.scale + d.shift <= values.max)) {
          diags.error(r.get("scale", false)->loc,
                      fmt::format("'{}': the mean shape x scale + shift is {}, more than {}",
                                  r.path(), d.shape * d.scale + d.shift, values.max_text));
        }
      } else if (!by.empty()) {
        const auto v = r.number("mean", true, values);
        if (v && *v > d.shift && d.shape > 0) {
          d.scale = (*v - d.shift) / d.shape;
        } else if (v) {
          diags.error(r.get("mean", false)->loc,
                      fmt::format("'{}' must exceed the shift", r.path_of("mean")));
        }
      }
      break;
    }
    case Family::uniform: {
      const auto low = r.number("min", true, values);
      const auto high = r.number("max", true, values);
      assign(d.low, low);
      assign(d.high, high);
      if (low && high && *high <= *low) {
        diags.error(r.loc(), fmt::format("'{}': max must exceed min", r.path()));
      }
      break;
    }
    case Family::empirical: {
      const std::string by = pick_one({"samples", "file"});
      const size_t errors_before = diags.size();
      if (by == "samples") {
        if (const ConfigNode* list = r.list("samples", true)) {
          for (const auto& item : list->items) {
            const auto v = item.is_scalar() ? parse_number(item.scalar) : std::nullopt;
            if (!v || !std::isfinite(*v)) {
              diags.error(item.loc, fmt::format("'{}' must hold numbers", r.path_of("samples")));
            } else {
              d.samples.push_back(*v);
            }
          }
        }
      } else if (by == "file") {
        if (auto file = r.get("file", true); file != nullptr && file->is_scalar()) {
          d.samples = read_sample_file(*file, r.path_of("file"), diags);
        } else if (file != nullptr) {
          diags.error(file->loc, fmt::format("'{}' must be a file name", r.path_of("file")));
        }
      }
      // (Not after the file's own error.)
      if (!by.empty() && d.samples.empty() && diags.size() == errors_before) {
        diags.error(r.loc(), fmt::format("'{}' has no samples", r.path()));
      }
      for (double v : d.samples) {
        if (!(v >= values.min && v <= values.max)) {
          diags.error(r.loc(), fmt::format("'{}': samples must be at least {} and at most {}, "
                                           "got {}",
                                           r.path(), values.min_text, values.max_text, v));
          break;
        }
      }
      break;
    }
    case Family::constant:
    case Family::mixture:
      break;
  }
}

DistributionSpec read_mixture(const ConfigNode& list, const std::string& path,
                              const ValueRange& values, Diagnostics& diags) {
  DistributionSpec d;
  d.family = DistributionSpec::Family::mixture;
  if (!list.is_sequence() || list.items.empty()) {
    diags.error(list.loc, fmt::format("'{}' must be a list of components, each with a 'weight' "
                                      "and one distribution",
                                      path));
    return d;
  }
  double total = 0;
  for (size_t i = 0; i < list.items.size(); ++i) {
    const ConfigNode& item = list.items[i];
    const std::string item_path = fmt::format("{}.{}", path, i);
    if (!item.is_map()) {
      diags.error(item.loc,
                  fmt::format("'{}' must be a map with 'weight' and one distribution", item_path));
      continue;
    }
    double weight = 0;
    ConfigNode rest = item;
    rest.entries.clear();
    for (const auto& entry : item.entries) {
      if (entry.key != "weight") {
        rest.entries.push_back(entry);
        continue;
      }
      const auto w = entry.value.is_scalar() ? parse_number(entry.value.scalar) : std::nullopt;
      if (!w || !(*w > 0) || !(*w <= kMaxMixtureWeight)) {
        diags.error(entry.value.loc, fmt::format("'{}.weight' must be a positive number, at "
                                                 "most {}",
                                                 item_path, kMaxMixtureWeight));
      } else {
        weight = *w;
      }
    }
    if (weight == 0 && item.find("weight") == nullptr) {
      diags.error(item.loc, fmt::format("'{}' needs a 'weight'", item_path));
    }
    DistributionSpec component = read_distribution(rest, item_path, values, diags);
    if (component.family == DistributionSpec::Family::mixture) {
      diags.error(item.loc, fmt::format("'{}': mixtures cannot nest", item_path));
    }
    total += weight;
    d.components.push_back({weight, std::move(component)});
  }
  for (auto& [weight, component] : d.components) weight = total > 0 ? weight / total : 0;
  return d;
}

DistributionSpec read_distribution(const ConfigNode& node, const std::string& path,
                                   const ValueRange& values, Diagnostics& diags) {
  DistributionSpec d;
  const std::string expected =
      fmt::format("{} or a map with one of normal, lognormal, gamma, uniform, empirical, mixture",
                  values.min > 0 ? "a positive number" : "a number");
  if (node.is_scalar()) {
    const auto v = parse_number(node.scalar);
    if (!v || !std::isfinite(*v) || (values.min > 0 && *v <= 0)) {
      diags.error(node.loc, fmt::format("'{}' must be {}, got '{}'", path, expected, node.scalar));
    } else if (in_range(node, path, v, values, diags)) {
      d.value = *v;
    }
    return d;
  }
  if (!node.is_map() || node.entries.size() != 1) {
    diags.error(node.loc, fmt::format("'{}' must be {}", path, expected));
    return d;
  }
  const ConfigEntry& entry = node.entries.front();
  const std::string family_path = path + "." + entry.key;
  auto it = std::find(kFamilies.begin(), kFamilies.end(), entry.key);
  if (it == kFamilies.end()) {
    const std::string near = closest_match(entry.key, kFamilies);
    diags.error(entry.key_loc,
                fmt::format("unknown distribution '{}' in '{}'{}", entry.key, path,
                            near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near)));
    return d;
  }
  if (entry.key == "mixture") return read_mixture(entry.value, family_path, values, diags);
  if (entry.key == "constant") return read_distribution(entry.value, family_path, values, diags);
  d.family = static_cast<DistributionSpec::Family>(it - kFamilies.begin() + 1);
  if (!entry.value.is_map()) {
    diags.error(entry.value.loc, fmt::format("'{}' must be a map of parameters", family_path));
    return d;
  }
  MapReader r(entry.value, family_path, diags);
  read_family(d, r, values);
  r.finish();
  return d;
}

/// An optional distribution at `key` of `r`.
/// An optional distribution at `key` of `r`, by default of a multiplicative factor.
std::optional<DistributionSpec> distribution_at(MapReader& r, std::string_view key,
                                                const ValueRange& values = limits::kFactor) {
  const ConfigNode* node = r.get(key, false);
  if (node == nullptr) return std::nullopt;
  return read_distribution(*node, r.path_of(key), values, r.diags());
}

void read_kernels(MapReader& parent, VariabilitySpec& v) {
  const ConfigNode* node = parent.map("kernels", false);
  if (node == nullptr) return;
  MapReader r(*node, parent.path_of("kernels"), parent.diags());
  if (auto d = distribution_at(r, "default")) {
    v.has_kernel_default = true;
    v.kernel_default = *d;
  }
  for (const char* name : {"gemm", "attention", "elementwise", "optimizer"}) {
    if (auto d = distribution_at(r, name)) v.kernel_classes[name] = *d;
  }
  if (const ConfigNode* comm = r.get("communication", false)) {
    r.diags().error(comm->loc, fmt::format("'{}': communication varies by scope under "
                                           "'variability.network.jitter'",
                                           r.path_of("communication")));
  }
  if (const ConfigNode* names = r.map("names", false)) {
    for (const auto& entry : names->entries) {
      v.kernel_names.emplace_back(
          entry.key, read_distribution(entry.value, r.path_of("names") + "." + entry.key,
                                       limits::kFactor, r.diags()));
    }
  }
  r.finish();
}

void read_gpus(MapReader& parent, VariabilitySpec& v) {
  const ConfigNode* node = parent.map("gpus", false);
  if (node == nullptr) return;
  MapReader r(*node, parent.path_of("gpus"), parent.diags());
  v.has_gpu_speed = true;
  assign(v.per_gpu, distribution_at(r, "per_gpu"));
  assign(v.per_node, distribution_at(r, "per_node"));
  assign(v.per_rack, distribution_at(r, "per_rack"));
  r.finish();
}

/// The place of a slow node or GPU: `id_key` (node or gpu), `rank`, or grid coordinates.
template <typename Spec>
void read_place(MapReader& r, const char* id_key, int& id, Spec& spec) {
  const bool by_id = r.get(id_key, false) != nullptr;
  const bool by_rank = r.get("rank", false) != nullptr;
  const bool by_coords =
      r.get("stage", false) || r.get("replica", false) || r.get("tp", false) || r.get("cp", false);
  if (by_id + by_rank + by_coords != 1) {
    r.diags().error(r.loc(), fmt::format("'{}' needs exactly one of '{}', 'rank', or grid "
                                         "coordinates ('stage', 'replica', 'tp', 'cp')",
                                         r.path(), id_key));
  }
  assign(id, r.integer(id_key, false, 0));
  assign(spec.rank, r.integer("rank", false, 0));
  assign(spec.stage, r.integer("stage", false, 0));
  assign(spec.replica, r.integer("replica", false, 0));
  assign(spec.tp, r.integer("tp", false, 0));
  assign(spec.cp, r.integer("cp", false, 0));
}

void read_slow_gpus(MapReader& parent, VariabilitySpec& v) {
  const ConfigNode* list = parent.list("slow_gpus", false);
  if (list == nullptr) return;
  for (size_t i = 0; i < list->items.size(); ++i) {
    MapReader r(list->items[i], fmt::format("{}.{}", parent.path_of("slow_gpus"), i),
                parent.diags());
    SlowGpuSpec slow;
    slow.loc = list->items[i].loc;
    read_place(r, "gpu", slow.gpu, slow);
    assign(slow.slowdown, distribution_at(r, "slowdown"));
    slow.forward = distribution_at(r, "forward");
    slow.backward = distribution_at(r, "backward");
    if (!r.get("slowdown", false) && !slow.forward && !slow.backward) {
      r.diags().error(r.loc(),
                      fmt::format("'{}' needs 'slowdown', 'forward' or 'backward'", r.path()));
    }
    r.finish();
    v.slow_gpus.push_back(slow);
  }
}

void read_levels(MapReader& parent, VariabilitySpec& v) {
  const ConfigNode* node = parent.map("levels", false);
  if (node == nullptr) return;
  MapReader r(*node, parent.path_of("levels"), parent.diags());
  LevelsSpec& l = v.levels;
  l.run = distribution_at(r, "run");
  l.step = distribution_at(r, "step");
  l.node_step = distribution_at(r, "node_step");
  l.gpu_step = distribution_at(r, "gpu_step");
  l.microbatch = distribution_at(r, "microbatch");
  // `pass` for both directions, or one each.
  if (auto both = distribution_at(r, "pass")) l.forward_pass = l.backward_pass = both;
  if (auto forward = distribution_at(r, "forward_pass")) l.forward_pass = forward;
  if (auto backward = distribution_at(r, "backward_pass")) l.backward_pass = backward;
  if (r.get("pass", false) && (r.get("forward_pass", false) || r.get("backward_pass", false))) {
    r.diags().error(
        r.get("pass", false)->loc,
        fmt::format("'{}' takes 'pass' or 'forward_pass'/'backward_pass', not both", r.path()));
  }
  r.finish();
}

void read_host_variation(MapReader& parent, VariabilitySpec& v) {
  const ConfigNode* node = parent.map("host", false);
  if (node == nullptr) return;
  MapReader r(*node, parent.path_of("host"), parent.diags());
  for (const auto& [key, field] :
       {std::pair{"launch_gap", &v.host.launch_gap_s}, std::pair{"step", &v.host.step_s}}) {
    if (const ConfigNode* d = r.get(key, false)) {
      *field = read_duration_distribution(*d, r.path_of(key), r.diags());
    }
  }
  r.finish();
}

void read_slow_nodes(MapReader& parent, VariabilitySpec& v) {
  if (const ConfigNode* list = parent.list("slow_nodes", false)) {
    for (size_t i = 0; i < list->items.size(); ++i) {
      MapReader r(list->items[i], fmt::format("{}.{}", parent.path_of("slow_nodes"), i),
                  parent.diags());
      SlowNodeSpec slow;
      slow.loc = list->items[i].loc;
      read_place(r, "node", slow.node, slow);
      if (const ConfigNode* d = r.get("slowdown", true)) {
        slow.slowdown = read_distribution(*d, r.path_of("slowdown"), limits::kFactor, r.diags());
      }
      r.finish();
      v.slow_nodes.push_back(slow);
    }
  }
  if (const ConfigNode* node = parent.map("random_slow_nodes", false)) {
    MapReader r(*node, parent.path_of("random_slow_nodes"), parent.diags());
    if (auto p = r.number("probability", true, 0.0, false)) {
      if (*p > 1) {
        r.diags().error(r.get("probability", false)->loc,
                        fmt::format("'{}' must be at most 1", r.path_of("probability")));
      } else {
        v.random_slow_node_probability = *p;
      }
    }
    if (const ConfigNode* d = r.get("slowdown", true)) {
      v.random_slow_node_slowdown =
          read_distribution(*d, r.path_of("slowdown"), limits::kFactor, r.diags());
    }
    r.finish();
  }
}

void read_thermal(MapReader& parent, VariabilitySpec& v) {
  const ConfigNode* node = parent.map("thermal", false);
  if (node == nullptr) return;
  MapReader r(*node, parent.path_of("thermal"), parent.diags());
  ThermalSpec& t = v.thermal;
  v.has_thermal = true;
  assign(t.ambient_c, distribution_at(r, "ambient_c", limits::kTemperature));
  if (auto per = r.choice("ambient_per", false, {"node", "rack"})) t.ambient_per_rack = *per == 1;
  assign(t.resistance_c_per_w, r.number("resistance_c_per_w", false, limits::kThermalResistance));
  assign(t.time_constant_s,
         r.quantity("time_constant", false, units::parse_duration, limits::kTimeConstant));
  assign(t.idle_power_w, r.number("idle_power_w", false, limits::kPower));
  assign(t.busy_power_w, r.number("busy_power_w", false, limits::kPower));
  assign(t.throttle_c, r.number("throttle_c", false, limits::kTemperature));
  assign(t.derate_per_c, r.number("derate_per_c", false, limits::kDerate));
  assign(t.min_clock, r.number("min_clock", false, limits::kFraction));
  assign(t.power_cap_w, r.number("power_cap_w", false, limits::kPower));
  assign(t.initial_c, r.number("initial_c", false, limits::kTemperature));
  if (t.busy_power_w <= t.idle_power_w) {
    r.diags().error(r.loc(), fmt::format("'{}': busy_power_w must exceed idle_power_w", r.path()));
  }
  if (t.power_cap_w > 0 && t.power_cap_w <= t.idle_power_w) {
    r.diags().error(r.get("power_cap_w", false)->loc,
                    fmt::format("'{}' must exceed idle_power_w", r.path_of("power_cap_w")));
  }
  r.finish();
}

void read_network(MapReader& parent, VariabilitySpec& v) {
  const ConfigNode* node = parent.map("network", false);
  if (node == nullptr) return;
  MapReader r(*node, parent.path_of("network"), parent.diags());
  constexpr CommScope kScopes[] = {CommScope::intra_node, CommScope::inter_node,
                                   CommScope::cross_datacenter};
  for (const auto& [key, by_scope] :
       {std::pair{"jitter", &v.jitter}, std::pair{"transfer_jitter", &v.transfer_jitter}}) {
    const ConfigNode* jitter = r.map(key, false);
    if (jitter == nullptr) continue;
    MapReader j(*jitter, r.path_of(key), r.diags());
    for (CommScope scope : kScopes) {
      if (auto d = distribution_at(j, to_string(scope))) (*by_scope)[scope] = *d;
    }
    // Collective jitter per operation: in every scope, or a map by scope.
    for (const std::string& name :
         std::string(key) == "jitter" ? collective_op_names() : std::vector<std::string>{}) {
      const ConfigNode* op_node = j.get(name, false);
      if (op_node == nullptr) continue;
      const CollectiveOp op = *parse_collective_op(name);
      const bool by_op_scope =
          op_node->is_map() && (op_node->find("intra_node") || op_node->find("inter_node") ||
                                op_node->find("cross_datacenter"));
      if (by_op_scope) {
        MapReader o(*op_node, j.path_of(name), r.diags());
        for (CommScope scope : kScopes) {
          if (auto d = distribution_at(o, to_string(scope))) v.jitter_by_op[{op, scope}] = *d;
        }
        o.finish();
        continue;
      }
      const DistributionSpec d =
          read_distribution(*op_node, j.path_of(name), limits::kFactor, r.diags());
      for (CommScope scope : kScopes) v.jitter_by_op[{op, scope}] = d;
    }
    j.finish();
  }
  if (const ConfigNode* list = r.list("regimes", false)) {
    double total = 0;
    for (size_t i = 0; i < list->items.size(); ++i) {
      MapReader g(list->items[i], fmt::format("{}.{}", r.path_of("regimes"), i), r.diags());
      RegimeSpec regime;
      assign(regime.probability, g.number("probability", true, 0.0, true));
      assign(regime.slowdown, g.number("slowdown", true, limits::kFactor));
      g.finish();
      total += regime.probability;
      v.regimes.push_back(regime);
    }
    if (list->items.empty() || std::abs(total - 1) > 1e-6) {
      r.diags().error(list->loc, fmt::format("'{}' probabilities must sum to 1, got {}",
                                             r.path_of("regimes"), total));
    }
  }
  if (auto d = distribution_at(r, "wan_rtt_ms", limits::kRoundTripMs)) {
    v.has_wan_rtt = true;
    v.wan_rtt_s = *d;
    // Stored in seconds: scale every parameter that carries the unit.
    scale_distribution(v.wan_rtt_s, 1e-3);
  }
  r.finish();
}

}  // namespace

DistributionSpec read_distribution_spec(const ConfigNode& node, const std::string& path,
                                        bool positive, Diagnostics& diags) {
  return read_distribution(node, path, positive ? limits::kPositive : limits::kAnyValue, diags);
}

DistributionSpec read_distribution_spec(const ConfigNode& node, const std::string& path,
                                        const ValueRange& values, Diagnostics& diags) {
  return read_distribution(node, path, values, diags);
}

std::optional<DistributionSpec> read_duration_distribution(const ConfigNode& node,
                                                           const std::string& path,
                                                           Diagnostics& diags) {
  if (node.is_scalar()) {
    std::string reason;
    const auto seconds = units::parse_duration(node.scalar, &reason);
    if (!seconds) {
      diags.error(node.loc,
                  fmt::format("invalid value '{}' for '{}': {}", node.scalar, path, reason));
      return std::nullopt;
    }
    return DistributionSpec::constant_at(*seconds);
  }
  if (!node.is_map()) {
    diags.error(node.loc, fmt::format("'{}' must be a duration such as '10min', or a map with "
                                      "'unit' and one distribution",
                                      path));
    return std::nullopt;
  }
  const ConfigNode* unit = node.find("unit");
  ConfigNode family = node;
  family.entries.clear();
  for (const auto& entry : node.entries) {
    if (entry.key != "unit") family.entries.push_back(entry);
  }
  if (unit == nullptr) {
    diags.error(node.loc, fmt::format("'{}' needs a 'unit' for its distribution (one of ns, us, "
                                      "ms, s, min, h, d)",
                                      path));
    return std::nullopt;
  }
  std::string reason;
  const auto factor =
      unit->is_scalar() ? units::parse_duration("1" + unit->scalar, &reason) : std::nullopt;
  if (!factor || *factor <= 0) {
    diags.error(unit->loc, fmt::format("invalid value '{}' for '{}.unit': expected one of ns, "
                                       "us, ms, s, min, h, d",
                                       unit->scalar, path));
    return std::nullopt;
  }
  DistributionSpec d = read_distribution_spec(family, path, true, diags);
  scale_distribution(d, *factor);
  return d;
}

void scale_distribution(DistributionSpec& d, double factor) {
  using Family = DistributionSpec::Family;
  switch (d.family) {
    case Family::constant:
      d.value *= factor;
      break;
    case Family::normal:
      d.mean *= factor;
      d.stddev *= factor;
      d.floor *= factor;
      break;
    case Family::lognormal:
      d.mu += std::log(factor);
      d.shift *= factor;
      break;
    case Family::gamma:
      d.scale *= factor;
      d.shift *= factor;
      break;
    case Family::uniform:
      d.low *= factor;
      d.high *= factor;
      break;
    case Family::empirical:
      for (double& s : d.samples) s *= factor;
      break;
    case Family::mixture:
      for (auto& [weight, component] : d.components) scale_distribution(component, factor);
      break;
  }
}

VariabilitySpec read_variability(const ConfigNode& node, Diagnostics& diags) {
  VariabilitySpec v;
  if (node.kind == ConfigNode::Kind::Null) return v;  // `variability: null` turns it off
  MapReader r(node, "variability", diags);
  if (!node.is_map()) return v;  // reported by the reader
  assign(v.rack_nodes, r.integer("rack_nodes", false, 1, 1 << 22));
  read_kernels(r, v);
  read_gpus(r, v);
  read_slow_nodes(r, v);
  read_slow_gpus(r, v);
  read_thermal(r, v);
  read_network(r, v);
  read_levels(r, v);
  read_host_variation(r, v);
  r.finish();
  return v;
}

}  // namespace prismsim
