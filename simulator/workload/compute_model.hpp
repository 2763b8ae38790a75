#pragma once

#include <string>

#include "config/scenario.hpp"
#include "workload/program.hpp"

namespace prismsim {

/// The work of one kernel before it is timed. GEMMs give their shape (m x k by k x n, `batch`
/// independent products), the others only flops and bytes.
struct KernelWork {
  std::string name;
  KernelClass kernel_class = KernelClass::elementwise;
  double flops = 0;
  double bytes = 0;  ///< HBM traffic
  double m = 0, n = 0, k = 0;
  double batch = 1;
  /// A linear layer's GEMM inside a transformer layer: runs in FP8 or FP4 when the workload
  /// quantizes them (`workload.fp8_gemms`, `fp4_gemms`). The output head and attention's own
  /// products do not.
  bool fp8_eligible = false;
  /// A backward GEMM of such a layer that accumulates in split mode when it runs in FP8
  /// (`compute.fp8_split_accumulation`).
  bool split_accumulation = false;
  /// An attention kernel's library, whose efficiency the platform may give apart (other kernel
  /// classes ignore it).
  AttentionBackend attention_backend = AttentionBackend::cudnn;
};

/// A GEMM of shape m x n x k (batch products) with `bytes_per_element` operands.
KernelWork gemm(std::string name, double m, double n, double k, double bytes_per_element,
                double batch = 1);
/// A memory-bound kernel moving `bytes`.
KernelWork memory_bound(std::string name, double bytes,
                        KernelClass kernel_class = KernelClass::elementwise);

/// Fraction of peak a GEMM of this shape reaches in `precision`: its gemm_efficiency x prod over
/// m, n, k of x / (x + gemm_half_size). Small or skinny GEMMs leave tiles and waves partly empty;
/// the factor models it with one size.
double gemm_efficiency(const ComputeModelSpec& model, Precision precision, double m, double n,
                       double k);

/// The precision `work` runs in: FP8 (FP4) for an eligible GEMM of a workload with fp8_gemms
/// (fp4_gemms), else the workload's precision.
Precision kernel_precision(const KernelWork& work, const WorkloadSpec& workload);

/// Nominal duration on `gpu`, as the device runs it: the larger of compute time (flops at the
/// peak of `precision` x the class's efficiency) and memory time (bytes at HBM bandwidth x
/// memory_efficiency), plus a GEMM's fixed gemm_latency; at least kernel_overhead. The host's
/// time to launch kernels is not in it (the job builder's host model adds it).
double kernel_seconds(const KernelWork& work, const GpuSpec& gpu, Precision precision);

}  // namespace prismsim
