#include "workload/placement.hpp"

#include <numeric>
#include <stdexcept>

namespace prismsim {

std::vector<int> place_ranks(const ParallelismSpec& parallelism, const PlatformSpec& platform) {
  const int ranks = parallelism.dp * parallelism.tp * parallelism.pp;
  if (ranks > platform.total_gpus()) throw std::logic_error("placement: platform too small");
  std::vector<int> gpu_of_rank(static_cast<size_t>(ranks));
  std::iota(gpu_of_rank.begin(), gpu_of_rank.end(), 0);
  return gpu_of_rank;
}

}  // namespace prismsim
