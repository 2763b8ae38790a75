#include <doctest/doctest.h>

#include <cmath>

#include "microbenchmarks.hpp"
#include "near.hpp"

using namespace prismsim;
using prismsim::testing::Near;

TEST_CASE("a GEMM fit recovers efficiency, size dependence and latency from exact rates") {
  const GemmMachine machine{1e15, 3e12, 1, 2};
  const GemmModel known{0.7, 120, 6e-6};
  std::vector<GemmSample> samples;
  for (double m : {512.0, 1024.0, 4096.0, 16384.0}) {
    for (double k : {256.0, 2048.0, 8192.0}) {
      const double n = m / 2;
      samples.push_back({0, m, n, k, 2 * m * n * k / gemm_model_seconds(known, machine, m, n, k)});
    }
  }
  // A memory-bound shape too.
  samples.push_back(
      {0, 800000, 192, 768,
       2 * 800000.0 * 192 * 768 / gemm_model_seconds(known, machine, 800000, 192, 768)});
  const GemmFit fit = fit_gemm(samples, machine);
  CHECK(fit.model.efficiency == Near{0.7, 1e-3});
  CHECK(fit.model.half_size == Near{120, 1e-2});
  CHECK(fit.model.latency_s == Near{6e-6, 1e-2});
  CHECK(fit.worst_error < 1e-4);
  CHECK(fit.loo_worst_error < 1e-3);
}

TEST_CASE("a GEMM fit's leave-one-out error shows what the model cannot predict") {
  // Rates from a model with a 30% dip at one shape: in sample the fit spreads it, left out it
  // stands alone.
  const GemmMachine machine{1e15, 3e12, 2, 2};
  const GemmModel known{0.8, 64, 2e-6};
  std::vector<GemmSample> samples;
  for (double s : {1024.0, 2048.0, 4096.0, 8192.0, 16384.0}) {
    samples.push_back({0, s, s, s, 2 * s * s * s / gemm_model_seconds(known, machine, s, s, s)});
  }
  samples[2].flops_per_s *= 0.7;
  const GemmFit fit = fit_gemm(samples, machine);
  CHECK(fit.loo_worst_error > 0.3);
  CHECK(fit.loo_worst_error > fit.worst_error);
  CHECK_THROWS_AS(fit_gemm({samples.begin(), samples.begin() + 3}, machine), std::invalid_argument);
}
