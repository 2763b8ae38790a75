#include "workload/program.hpp"

namespace prismsim {

const char* to_string(KernelClass kernel_class) {
  switch (kernel_class) {
    case KernelClass::gemm: return "gemm";
    case KernelClass::attention: return "attention";
    case KernelClass::elementwise: return "elementwise";
    case KernelClass::optimizer: return "optimizer";
    case KernelClass::communication: return "communication";
  }
  return "?";
}

}  // namespace prismsim
