#include "microbenchmarks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>

#include "core/diagnostics.hpp"
#include "core/files.hpp"
#include "core/text.hpp"
#include "nelder_mead.hpp"

namespace prismsim {
namespace {

/// The rows of a CSV table as maps from header names, with their line numbers.
struct Table {
  std::vector<std::string> header;
  std::vector<std::pair<int, std::vector<std::string>>> rows;

  int column(const std::string& name) const {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  }
};

Table read_table(const std::string& path, const std::vector<std::string>& required) {
  const auto file = std::make_shared<const std::string>(path);
  std::string reason;
  const auto read = read_file(path, &reason);
  if (!read) {
    throw InputError({{SourceLoc{file, 1, 1}, fmt::format("cannot read '{}': {}", path, reason)}});
  }
  const std::string& text = *read;
  Table table;
  size_t start = 0;
  int line = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    ++line;
    auto fields = split_fields(std::string_view(text).substr(start, end - start), ',');
    start = end + 1;
    if (fields.empty()) continue;
    if (table.header.empty()) {
      table.header = std::move(fields);
      continue;
    }
    if (fields.size() != table.header.size()) {
      throw InputError(
          {{SourceLoc{file, line, 1},
            fmt::format("expected {} fields, got {}", table.header.size(), fields.size())}});
    }
    table.rows.emplace_back(line, std::move(fields));
  }
  for (const std::string& name : required) {
    if (table.column(name) < 0) {
      throw InputError({{SourceLoc{file, 1, 1}, fmt::format("missing column '{}'", name)}});
    }
  }
  return table;
}

double positive(const std::string& path, int line, const std::string& text) {
  const auto value = parse_number(text);
  if (!value || !(*value > 0) || !std::isfinite(*value)) {
    throw InputError({{SourceLoc{std::make_shared<const std::string>(path), line, 1},
                       fmt::format("expected a positive number, got '{}'", text)}});
  }
  return *value;
}

}  // namespace

std::vector<GemmSample> read_gemm_table(const std::string& path, const std::string& gpu,
                                        const std::string& precision) {
  const Table t = read_table(path, {"gpu", "precision", "m", "n", "k", "tflops"});
  std::vector<GemmSample> out;
  for (const auto& row : t.rows) {
    // Named copies, not structured bindings: clang 14 cannot capture those in a lambda.
    const int line = row.first;
    const std::vector<std::string>& f = row.second;
    if (f[static_cast<size_t>(t.column("gpu"))] != gpu ||
        f[static_cast<size_t>(t.column("precision"))] != precision) {
      continue;
    }
    auto get = [&](const char* name) {
      return positive(path, line, f[static_cast<size_t>(t.column(name))]);
    };
    out.push_back({line, get("m"), get("n"), get("k"), get("tflops") * 1e12});
  }
  return out;
}

std::vector<BandwidthSample> read_hbm_table(const std::string& path, const std::string& gpu) {
  const Table t = read_table(path, {"gpu", "kernel", "TBps"});
  std::vector<BandwidthSample> out;
  for (const auto& [line, f] : t.rows) {
    if (f[static_cast<size_t>(t.column("gpu"))] != gpu) continue;
    out.push_back({f[static_cast<size_t>(t.column("kernel"))],
                   positive(path, line, f[static_cast<size_t>(t.column("TBps"))]) * 1e12});
  }
  return out;
}

double gemm_model_seconds(const GemmModel& model, const GemmMachine& machine, double m, double n,
                          double k) {
  const double h = model.half_size;
  const double efficiency = model.efficiency * (m / (m + h)) * (n / (n + h)) * (k / (k + h));
  const double compute_s = 2 * m * n * k / (machine.peak_flops_per_s * efficiency);
  const double memory_s = ((m * k + k * n) * machine.operand_bytes + m * n * machine.output_bytes) /
                          machine.bandwidth_Bps;
  return std::max(compute_s, memory_s) + model.latency_s;
}

namespace {

/// Unconstrained parameters: logit of the efficiency, logs of the half size and latency (us).
GemmModel model_of(const std::vector<double>& x) {
  return {1 / (1 + std::exp(-x[0])), std::exp(x[1]), std::exp(x[2]) * 1e-6};
}

double rate_error(const GemmModel& model, const GemmMachine& machine, const GemmSample& s) {
  const double rate = 2 * s.m * s.n * s.k / gemm_model_seconds(model, machine, s.m, s.n, s.k);
  return rate / s.flops_per_s - 1;
}

GemmModel least_squares(const std::vector<GemmSample>& samples, const GemmMachine& machine) {
  auto objective = [&](const std::vector<double>& x) {
    const GemmModel model = model_of(x);
    double sum = 0;
    for (const GemmSample& s : samples) {
      const double r = std::log1p(rate_error(model, machine, s));
      sum += r * r;
    }
    return sum;
  };
  std::vector<double> best;
  double best_value = INFINITY;
  for (const auto& [e, h, t] :
       {std::tuple{0.8, 64.0, 2.0}, std::tuple{0.6, 256.0, 10.0}, std::tuple{0.9, 8.0, 0.5}}) {
    auto x =
        nelder_mead(objective, {std::log(e / (1 - e)), std::log(h), std::log(t)}, 0.5, 4000, 1e-14);
    x = nelder_mead(objective, x, 0.1, 4000, 1e-16);
    if (const double value = objective(x); value < best_value) {
      best_value = value;
      best = x;
    }
  }
  return model_of(best);
}

}  // namespace

GemmFit fit_gemm(const std::vector<GemmSample>& samples, const GemmMachine& machine) {
  if (samples.size() < 4) {
    throw std::invalid_argument(
        fmt::format("a GEMM fit needs at least 4 measured shapes, got {}", samples.size()));
  }
  GemmFit fit;
  fit.model = least_squares(samples, machine);
  for (size_t i = 0; i < samples.size(); ++i) {
    const double in = std::abs(rate_error(fit.model, machine, samples[i]));
    std::vector<GemmSample> others = samples;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
    const double out = std::abs(rate_error(least_squares(others, machine), machine, samples[i]));
    fit.mean_error += in / static_cast<double>(samples.size());
    fit.loo_mean_error += out / static_cast<double>(samples.size());
    fit.worst_error = std::max(fit.worst_error, in);
    fit.loo_worst_error = std::max(fit.loo_worst_error, out);
  }
  return fit;
}

}  // namespace prismsim
