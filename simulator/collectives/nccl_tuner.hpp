#pragma once

#include <string_view>

#include "collectives/collective.hpp"

namespace prismsim {

/// How a platform's collectives pick their algorithm and protocol.
enum class TunerKind {
  fastest,  ///< the least time by prismsim's own cost model (a tuner plugin tuned on the machine)
  nccl,     ///< NCCL's built-in tuner as of NCCL 2.19 and later (src/graph/tuning.cc)
  nccl_2_8  ///< NCCL 2.8's built-in tuner
};

/// GPU generations NCCL's tuner tells apart (its compute-capability index).
enum class GpuGeneration { volta, ampere, hopper, blackwell };
/// The generation of a GPU model name ("A100-SXM4-40GB" -> ampere); hopper when unrecognised.
GpuGeneration gpu_generation(std::string_view model);

/// NCCL's protocols.
enum class NcclProtocol { ll, ll128, simple };

/// What NCCL's tuner knows of a communicator: its shape and the bandwidths its topology search
/// found (here: a channel's share of the nominal NVLink bandwidth, and one NIC per channel).
struct TunerInputs {
  CollectiveOp op = CollectiveOp::all_reduce;
  int ranks = 1;
  int nodes = 1;
  int channels = 1;
  GpuGeneration generation = GpuGeneration::hopper;
  bool amd_cpu = false;  ///< NCCL's LL limits and network overhead depend on the CPU vendor
  double intra_channel_GBps = 0;  ///< per channel inside a node (NCCL's bwIntra)
  double inter_channel_GBps = 0;  ///< per channel across nodes (NCCL's bwInter)
  bool nvls = false;              ///< the node's NVSwitch reduces (NVLink SHARP)
};

/// NCCL's estimate, in seconds, of a call of `bytes` with `algorithm` (ring, tree or nvls) and
/// `protocol`: latency + bytes / bandwidth from its constants and formulas (cited in
/// docs/design.md); a negative value where NCCL would not use the pair. NCCL picks the least.
double nccl_estimate_seconds(TunerKind kind, const TunerInputs& in, Algorithm algorithm,
                             NcclProtocol protocol, double bytes);

}  // namespace prismsim
