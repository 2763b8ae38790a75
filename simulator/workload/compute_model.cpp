#include "workload/compute_model.hpp"

#include <algorithm>

namespace prismsim {

KernelWork gemm(std::string name, double m, double n, double k, double bytes_per_element,
                double batch) {
  KernelWork work;
  work.name = std::move(name);
  work.kernel_class = KernelClass::gemm;
  work.flops = 2.0 * m * n * k * batch;
  work.bytes = (m * k + k * n + m * n) * bytes_per_element * batch;
  work.m = m;
  work.n = n;
  work.k = k;
  work.batch = batch;
  return work;
}

KernelWork memory_bound(std::string name, double bytes, KernelClass kernel_class) {
  KernelWork work;
  work.name = std::move(name);
  work.kernel_class = kernel_class;
  work.bytes = bytes;
  return work;
}

double gemm_efficiency(const ComputeModelSpec& model, Precision precision, double m, double n,
                       double k) {
  const double h = model.gemm_half_size;
  return model.gemm_efficiency_for(precision) * (m / (m + h)) * (n / (n + h)) * (k / (k + h));
}

Precision kernel_precision(const KernelWork& work, const WorkloadSpec& workload) {
  if (!work.fp8_eligible || work.kernel_class != KernelClass::gemm) return workload.precision;
  if (workload.fp4_gemms) return Precision::fp4;
  return workload.fp8_gemms ? Precision::fp8 : workload.precision;
}

double kernel_seconds(const KernelWork& work, const GpuSpec& gpu, Precision precision) {
  const ComputeModelSpec& model = gpu.compute;
  double efficiency = 1.0;
  double latency_s = 0;
  switch (work.kernel_class) {
    case KernelClass::gemm:
      efficiency = gemm_efficiency(model, precision, work.m, work.n, work.k);
      if (precision == Precision::fp8 && work.split_accumulation) {
        efficiency *= model.fp8_split_accumulation;
      }
      latency_s = model.gemm_latency_s;
      break;
    case KernelClass::attention:
      efficiency = model.attention_efficiency_for(work.attention_backend);
      break;
    default:
      break;
  }
  const double compute_s =
      work.flops > 0 ? work.flops / (gpu.peak_flops.at(precision) * efficiency) : 0.0;
  const double memory_s =
      work.bytes > 0 ? work.bytes / (gpu.memory_bandwidth_Bps * model.memory_efficiency) : 0.0;
  return std::max(model.kernel_overhead_s, std::max(compute_s, memory_s) + latency_s);
}

}  // namespace prismsim
