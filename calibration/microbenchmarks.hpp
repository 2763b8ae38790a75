#pragma once

#include <string>
#include <vector>

namespace prismsim {

/// One measured GEMM: shape and achieved rate.
struct GemmSample {
  int line = 0;  ///< in its file, for messages
  double m = 0, n = 0, k = 0;
  double flops_per_s = 0;
};

/// One measured HBM kernel (STREAM-like: Copy, Mul, Add, Triad, Dot) and its bandwidth.
struct BandwidthSample {
  std::string kernel;
  double bytes_per_s = 0;
};

/// Reads the GEMM rows of `gpu` and `precision` (e.g. "FP8") from a table with columns
/// system,gpu,precision,m,n,k,tflops (Azure's AI benchmarking guide). Throws InputError.
std::vector<GemmSample> read_gemm_table(const std::string& path, const std::string& gpu,
                                        const std::string& precision);
/// Reads the rows of `gpu` from a table with columns system,gpu,kernel,TBps. Throws InputError.
std::vector<BandwidthSample> read_hbm_table(const std::string& path, const std::string& gpu);

/// What a GEMM costs on one GPU and precision: the device time of compute_model.hpp,
/// max(flops / (peak x efficiency x prod x/(x + half_size)), bytes / bandwidth) + latency.
struct GemmModel {
  double efficiency = 0.8;
  double half_size = 64;
  double latency_s = 0;
};

/// The GPU and the operand sizes a GEMM table was measured with.
struct GemmMachine {
  double peak_flops_per_s = 0;
  double bandwidth_Bps = 0;  ///< achieved HBM bandwidth (for memory-bound shapes)
  double operand_bytes = 2;  ///< per element of A and B
  double output_bytes = 2;   ///< per element of C
};

/// Seconds of an m x n x k GEMM under `model`.
double gemm_model_seconds(const GemmModel& model, const GemmMachine& machine, double m, double n,
                          double k);

/// A fit and its errors: in sample, and leaving each sample out in turn (fit on the others,
/// predict it), as mean and worst absolute relative error of the rate.
struct GemmFit {
  GemmModel model;
  double mean_error = 0, worst_error = 0;
  double loo_mean_error = 0, loo_worst_error = 0;
};

/// Fits efficiency, half size and latency by least squares on log rates (Nelder-Mead from fixed
/// starts: the same samples give the same fit). Needs at least 4 samples (throws
/// std::invalid_argument otherwise).
GemmFit fit_gemm(const std::vector<GemmSample>& samples, const GemmMachine& machine);

}  // namespace prismsim
