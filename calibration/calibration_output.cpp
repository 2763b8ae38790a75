#include "calibration_output.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "core/files.hpp"
#include "core/json.hpp"
#include "core/text.hpp"
#include "variability/distribution.hpp"

namespace prismsim {
namespace {

std::string number(double v) { return fmt::format("{:.6g}", v); }

using Layout = JsonWriter::Layout;
/// Figures of the report carry six significant digits; non-finite ones (a log-likelihood of
/// -inf) are null.
constexpr int kReportDigits = 6;

/// "1,234,567".
std::string thousands(size_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

/// "KS normal 0.031, lognormal 0.004, gamma 0.006 -> lognormal".
std::string fit_summary(const SlowdownFit& f) {
  std::string out = fmt::format("{} samples, p50 {:.4f}, p95 {:.4f}, p99 {:.4f}",
                                thousands(f.samples), f.p50, f.p95, f.p99);
  if (f.families.empty()) return out + ": " + f.chosen;
  out += "; KS";
  for (size_t i = 0; i < f.families.size(); ++i) {
    out +=
        fmt::format("{} {} {:.4f}", i == 0 ? "" : ",", kFamilyNames[i], f.families[i].ks_distance);
  }
  return out + fmt::format(", empirical {:.4f} -> {}", f.empirical_ks, f.chosen);
}

std::string input_line(const InputSummary& in) {
  std::string out = fmt::format("{}: {}, {} samples", in.path, in.format, thousands(in.samples));
  if (in.ignored > 0) out += fmt::format(", {} other events ignored", thousands(in.ignored));
  if (in.zero_length > 0) {
    out += fmt::format(", {} zero-length kernels skipped (the first at {})",
                       thousands(in.zero_length), in.first_zero_length);
  }
  if (in.steps > 0) out += fmt::format(", {} steps", in.steps);
  return out;
}

/// The step levels kernels show, one line (or why there are none).
std::string step_levels_line(const KernelStepLevels& l) {
  if (l.samples == 0 || !l.step_estimable) return "step levels from kernels: none: " + l.skipped;
  std::string out = fmt::format(
      "step levels from kernels ({} samples, {} steps, {} GPUs): step sigma "
      "{:.4f}",
      thousands(l.samples), l.steps, l.gpus, l.step_sigma);
  out += l.gpu_step_estimable ? fmt::format(", GPU x step sigma {:.4f}", l.gpu_step_sigma)
                              : ", GPU x step: " + l.skipped;
  return out +
         fmt::format(", residual {:.4f}; contained in the kernel noise, not written as levels",
                     l.residual_sigma);
}

std::string calls_line(const SampleSet& set) {
  if (set.matched_calls() + set.unmatched_calls() == 0) return "";
  return fmt::format(
      "collective calls: {} matched across ranks (each the shortest of its members'\n"
      "  durations: the last to arrive waits for no one), {} seen on one rank only\n",
      thousands(set.matched_calls()), thousands(set.unmatched_calls()));
}

/// An entry's key in its section: "kernels.gemm" -> "gemm".
std::string entry_key(const std::string& target) { return target.substr(target.rfind('.') + 1); }

/// An array of `values`, each to the report's digits.
void write_numbers(JsonWriter& j, const std::vector<double>& values) {
  j.begin_array(Layout::compact);
  for (double v : values) j.significant(v, kReportDigits);
  j.end();
}

void write_fit(JsonWriter& j, const SlowdownFit& f) {
  auto number = [&](const char* key, double v) { j.key(key).significant(v, kReportDigits); };
  auto quantiles_of = [&](const DistributionSpec& d) {
    std::vector<double> out;
    for (double p : f.probabilities) out.push_back(distribution_quantile(d, p));
    return out;
  };
  j.begin_object(Layout::compact).member("samples", f.samples);
  number("p50", f.p50);
  number("p95", f.p95);
  number("p99", f.p99);
  number("max", f.max);
  j.member("chosen", f.chosen)
      .member("distribution",
              f.chosen == "empirical" ? "empirical" : distribution_yaml(f.distribution));
  number("ks", f.ks_distance);
  number("empirical_ks", f.empirical_ks);
  j.key("families").begin_array(Layout::compact);
  for (size_t i = 0; i < f.families.size(); ++i) {
    j.begin_object(Layout::compact)
        .member("family", kFamilyNames[i])
        .member("distribution", distribution_yaml(f.families[i].distribution));
    number("ks", f.families[i].ks_distance);
    number("log_likelihood", f.families[i].log_likelihood);
    j.key("quantiles");
    write_numbers(j, quantiles_of(f.families[i].distribution));
    j.end();
  }
  j.end().key("probabilities");
  write_numbers(j, f.probabilities);
  j.key("quantiles");
  write_numbers(j, f.quantiles);
  j.key("chosen_quantiles");
  write_numbers(j, quantiles_of(f.distribution));
  j.end();
}

}  // namespace

std::string distribution_yaml(const DistributionSpec& d, const std::string& empirical_file) {
  using F = DistributionSpec::Family;
  switch (d.family) {
    case F::constant:
      return number(d.value);
    case F::normal:
      return fmt::format("{{normal: {{mean: {}, stddev: {}, floor: {}}}}}", number(d.mean),
                         number(d.stddev), number(d.floor));
    case F::lognormal:
      return fmt::format("{{lognormal: {{median: {}, sigma: {}{}}}}}",
                         number(std::exp(d.mu) + d.shift), number(d.sigma),
                         d.shift != 0 ? ", shift: " + number(d.shift) : "");
    case F::gamma:
      return fmt::format("{{gamma: {{shape: {}, scale: {}{}}}}}", number(d.shape), number(d.scale),
                         d.shift != 0 ? ", shift: " + number(d.shift) : "");
    case F::uniform:
      return fmt::format("{{uniform: {{min: {}, max: {}}}}}", number(d.low), number(d.high));
    case F::empirical: {
      if (!empirical_file.empty())
        return fmt::format("{{empirical: {{file: {}}}}}", empirical_file);
      std::string samples;
      for (double v : d.samples) samples += (samples.empty() ? "" : ", ") + number(v);
      return fmt::format("{{empirical: {{samples: [{}]}}}}", samples);
    }
    case F::mixture: {
      std::string parts;
      for (const auto& [weight, component] : d.components) {
        const std::string inner = distribution_yaml(component, empirical_file);
        parts += fmt::format("{}{{weight: {}, {}", parts.empty() ? "" : ", ", number(weight),
                             inner.front() == '{' ? inner.substr(1) : "constant: " + inner + "}");
      }
      return fmt::format("{{mixture: [{}]}}", parts);
    }
  }
  return "";
}

void write_variability_section(const Calibration& c, const SampleSet& set, const std::string& path,
                               const std::string& command) {
  const std::filesystem::path out_path(path);
  const std::string stem = out_path.stem().string();
  std::vector<std::string> side_files;
  // The distribution of entry `name`, its samples written beside the section when empirical.
  auto entry = [&](const std::string& name, const SlowdownFit& f) {
    // The measured values: the whole pool, or the heavy tail of a mixture.
    const DistributionSpec* measured = &f.distribution;
    for (const auto& [weight, component] : f.distribution.components) measured = &component;
    if (measured->family != DistributionSpec::Family::empirical) {
      return distribution_yaml(f.distribution);
    }
    const bool tail = measured != &f.distribution;
    const std::string file = fmt::format("{}.{}{}.txt", stem, name, tail ? ".tail" : "");
    std::string values =
        fmt::format("# Empirical slowdowns of {}{}: {} quantiles (prismsim calibrate)\n", name,
                    tail ? ", its heavy tail" : "", measured->samples.size());
    for (double v : measured->samples) values += number(v) + '\n';
    write_file(out_path.parent_path() / file, values);
    return distribution_yaml(f.distribution, file);
  };
  std::string y = fmt::format(
      "# A scenario's variability section, fitted by prismsim calibrate from measured durations:\n"
      "#   {}\n# Inputs:\n",
      command);
  for (const InputSummary& in : set.inputs()) y += "#   " + input_line(in) + "\n";
  if (set.matched_calls() + set.unmatched_calls() > 0) {
    y += fmt::format(
        "# Collective calls: {} matched across ranks (the shortest member's duration), "
        "{} on one rank only\n",
        thousands(set.matched_calls()), thousands(set.unmatched_calls()));
  }
  y += "# " + step_levels_line(c.step_levels) + "\n";
  size_t fitted = 0, skipped = 0;
  for (const SignatureFit& s : c.signatures) (s.fit ? fitted : skipped) += 1;
  y += fmt::format(
      "# {} signatures fitted, {} skipped (too few samples; see the report). A slowdown is a\n"
      "# duration over its signature's median (kernels: after dividing out their GPU's factor).\n"
      "# Fits by maximum likelihood; the family with the least Kolmogorov-Smirnov distance (KS),\n"
      "# or the empirical pool when none is close enough. Thermal state and network regimes are\n"
      "# not fitted.\n",
      fitted, skipped);
  std::string kernels, jitter, transfers;  // entries, in the targets' (sorted) order
  for (const TargetFit& t : c.targets) {
    const std::string key = entry_key(t.target);
    const auto text = [&](const char* indent) {
      return fmt::format("{0}# {1} signature{2}, {3}\n{0}{4}: {5}\n", indent, t.signatures,
                         t.signatures == 1 ? "" : "s", fit_summary(t.fit), key,
                         entry(t.target, t.fit));
    };
    if (t.target.rfind("kernels.", 0) == 0) {
      kernels += text("  ");
    } else if (t.target.rfind("network.jitter.", 0) == 0) {
      jitter += text("    ");
    } else {
      transfers += text("    ");
    }
  }
  if (!kernels.empty()) {
    y += "kernels:\n" + kernels;
  }
  const SpatialFit& sp = c.spatial;
  if (sp.per_gpu) {
    y += fmt::format(
        "gpus:\n  # {} GPUs{}; factor = a GPU's median duration over all GPUs'\n"
        "  # median, per kernel signature, then its median over signatures\n",
        sp.gpus, sp.nodes > 0 ? fmt::format(" on {} nodes", sp.nodes) : "");
    y += fmt::format("  # {}{}\n  per_gpu: {}\n", sp.nodes >= 2 ? "within a node: " : "",
                     fit_summary(*sp.per_gpu), entry("gpus.per_gpu", *sp.per_gpu));
    if (sp.node_sigma > 0) {
      y += fmt::format(
          "  # between nodes (random effects on log factors)\n"
          "  per_node: {{lognormal: {{median: 1, sigma: {}}}}}\n",
          number(sp.node_sigma));
    }
  } else {
    y += fmt::format("# gpus: not fitted: {}\n", sp.skipped);
  }
  if (!sp.slow_nodes.empty()) {
    y += "slow_nodes:\n  # Nodes much slower than the rest where measured (robust z-score); for\n"
         "  # another placement, remove them or use random_slow_nodes.\n";
    for (const Outlier& o : sp.slow_nodes) {
      const bool numeric =
          !o.id.empty() && o.id.find_first_not_of("0123456789") == std::string::npos;
      y += fmt::format("  {}- {{node: {}, slowdown: {:.4f}}}  # z {:.1f}\n", numeric ? "" : "# ",
                       o.id, o.slowdown, o.z);
    }
  }
  for (const Outlier& o : sp.slow_gpus) {
    y += fmt::format("# slow GPU: {}, {:.4f}x the median (z {:.1f})\n", o.id, o.slowdown, o.z);
  }
  if (!jitter.empty() || !transfers.empty()) y += "network:\n";
  if (!jitter.empty()) {
    y += "  jitter:\n" + jitter;
  }
  if (!transfers.empty()) {
    y += "  # Point-to-point transfers (pipeline send/receive), without the waits in the bubble\n"
         "  transfer_jitter:\n" +
         transfers;
  }
  write_file(path, y);
}

std::string calibration_report(const Calibration& c, const SampleSet& set) {
  std::string r = "inputs:\n";
  for (const InputSummary& in : set.inputs()) r += "  " + input_line(in) + "\n";
  r += calls_line(set);
  r += step_levels_line(c.step_levels) + "\n";
  r += fmt::format("\n{:<28} {:>5} {:>11} {:>7} {:>7} {:>7}  {:>7} {:>7} {:>7} {:>7}  {}\n",
                   "section entry", "sigs", "samples", "p50", "p95", "p99", "normal", "lognorm",
                   "gamma", "empiric", "chosen (KS)");
  auto row = [](const std::string& name, std::string sigs, const SlowdownFit& f) {
    std::string ks;
    for (size_t i = 0; i < 3; ++i) {
      ks += i < f.families.size() ? fmt::format(" {:>7.4f}", f.families[i].ks_distance)
                                  : fmt::format(" {:>7}", "-");
    }
    return fmt::format("{:<28} {:>5} {:>11} {:>7.4f} {:>7.4f} {:>7.4f} {} {:>7.4f}  {} ({:.4f})\n",
                       name, sigs, thousands(f.samples), f.p50, f.p95, f.p99, ks, f.empirical_ks,
                       f.chosen, f.ks_distance);
  };
  for (const TargetFit& t : c.targets) r += row(t.target, std::to_string(t.signatures), t.fit);
  const SpatialFit& sp = c.spatial;
  if (sp.per_gpu) {
    r += row("gpus.per_gpu", "-", *sp.per_gpu);
    r += fmt::format("\nspatial: {} GPUs{}", sp.gpus,
                     sp.nodes > 0 ? fmt::format(" on {} nodes", sp.nodes) : "");
    if (sp.nodes >= 2) r += fmt::format(", between-node sigma {:.4f}", sp.node_sigma);
    r += "\n";
  } else {
    r += fmt::format("\nspatial: not fitted: {}\n", sp.skipped);
  }
  for (const Outlier& o : sp.slow_nodes) {
    r += fmt::format("  slow node {}: {:.4f}x the median (robust z {:.1f})\n", o.id, o.slowdown,
                     o.z);
  }
  for (const Outlier& o : sp.slow_gpus) {
    r +=
        fmt::format("  slow GPU {}: {:.4f}x the median (robust z {:.1f})\n", o.id, o.slowdown, o.z);
  }
  r += fmt::format("\n{:<10} {:>9} {:>7} {:>10} {:>7} {:>7} {:>17}  {:<26}  {}\n", "kind",
                   "samples", "waits", "nominal", "p95", "p99", "fit (KS)", "entry", "signature");
  for (const SignatureFit& s : c.signatures) {
    const Signature& sig = set.signatures()[s.signature];
    const std::string waits = s.bubble_waits > 0 ? thousands(s.bubble_waits) : "-";
    if (!s.fit) {
      r += fmt::format("{:<10} {:>9} {:>7}  {:<72}  {}\n", to_string(sig.kind),
                       thousands(s.samples), waits, "skipped: " + s.skipped, sig.name);
      continue;
    }
    r += fmt::format("{:<10} {:>9} {:>7} {:>10} {:>7.4f} {:>7.4f} {:>17}  {:<26}  {}\n",
                     to_string(sig.kind), thousands(s.samples), waits, human_seconds(s.nominal_s),
                     s.fit->p95, s.fit->p99,
                     fmt::format("{} ({:.3f})", s.fit->chosen, s.fit->ks_distance),
                     s.target.empty() ? "not placed: scope unknown" : s.target, sig.name);
  }
  return r;
}

std::string calibration_json(const Calibration& c, const SampleSet& set) {
  JsonWriter j;
  j.begin_object().key("inputs").begin_array();
  for (const InputSummary& in : set.inputs()) {
    j.begin_object(Layout::compact)
        .member("path", in.path)
        .member("format", in.format)
        .member("samples", in.samples)
        .member("ignored", in.ignored)
        .member("zero_length", in.zero_length)
        .member("steps", in.steps)
        .end();
  }
  const KernelStepLevels& sl = c.step_levels;
  j.end().key("step_levels").begin_object(Layout::compact);
  j.member("samples", sl.samples).member("steps", sl.steps).member("gpus", sl.gpus);
  if (sl.step_estimable) j.member("step_sigma", sl.step_sigma);
  if (sl.gpu_step_estimable) j.member("gpu_step_sigma", sl.gpu_step_sigma);
  if (sl.step_estimable) j.member("residual_sigma", sl.residual_sigma);
  if (!sl.skipped.empty()) j.member("skipped", sl.skipped);
  j.end();
  j.key("entries").begin_array();
  for (const auto& target : c.targets) {
    j.begin_object(Layout::compact)
        .member("entry", target.target)
        .member("signatures", target.signatures)
        .key("fit");
    write_fit(j, target.fit);
    j.end();
  }
  j.end();
  const SpatialFit& sp = c.spatial;
  j.key("spatial").begin_object(Layout::compact).member("gpus", sp.gpus).member("nodes", sp.nodes);
  j.key("node_sigma").significant(sp.node_sigma, kReportDigits).member("skipped", sp.skipped);
  j.key("per_gpu");
  if (sp.per_gpu) {
    write_fit(j, *sp.per_gpu);
  } else {
    j.null();
  }
  j.key("outliers").begin_array(Layout::compact);
  for (const auto* list : {&sp.slow_gpus, &sp.slow_nodes}) {
    for (const Outlier& o : *list) {
      j.begin_object(Layout::compact)
          .member("kind", list == &sp.slow_gpus ? "gpu" : "node")
          .member("id", o.id);
      j.key("slowdown").significant(o.slowdown, kReportDigits);
      j.key("z").significant(o.z, kReportDigits).end();
    }
  }
  j.end().key("gpu_factors").begin_object(Layout::compact);
  for (const auto& [id, f] : sp.gpu_factor) j.key(id).significant(f, kReportDigits);
  j.end().end();
  j.key("signatures").begin_array();
  for (const SignatureFit& s : c.signatures) {
    const Signature& sig = set.signatures()[s.signature];
    j.begin_object(Layout::compact)
        .member("kind", to_string(sig.kind))
        .member("signature", sig.name)
        .member("class", sig.kernel_class)
        .member("samples", s.samples)
        .member("bubble_waits", s.bubble_waits);
    j.key("nominal_s").significant(s.nominal_s, kReportDigits);
    j.member("entry", s.target).member("skipped", s.skipped).key("fit");
    if (s.fit) {
      write_fit(j, *s.fit);
    } else {
      j.null();
    }
    j.end();
  }
  j.end().end();
  return j.take() + "\n";
}

}  // namespace prismsim
