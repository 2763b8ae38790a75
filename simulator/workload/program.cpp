#include "workload/program.hpp"

namespace prismsim {

const char* to_string(KernelClass kernel_class) {
  switch (kernel_class) {
    case KernelClass::gemm:
      return "gemm";
    case KernelClass::attention:
      return "attention";
    case KernelClass::elementwise:
      return "elementwise";
    case KernelClass::optimizer:
      return "optimizer";
    case KernelClass::communication:
      return "communication";
    case KernelClass::idle:
      return "idle";
  }
  return "?";
}

double nominal_seconds(const Job& job, const Op& op) {
  if (const auto* run = std::get_if<ops::RunSegment>(&op))
    return job.segments[run->segment].seconds;
  if (const auto* busy = std::get_if<ops::ComputeFor>(&op)) return busy->seconds;
  return 0;
}

std::optional<int> microbatch_of(const Op& op) {
  return std::visit(
      [](const auto& o) -> std::optional<int> {
        if constexpr (requires { o.microbatch; }) {
          return o.microbatch;
        } else {
          return std::nullopt;
        }
      },
      op);
}

}  // namespace prismsim
