#include "collectives/nccl_tuner.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

namespace prismsim {
namespace {

// NCCL's tuner constants (src/graph/tuning.cc of NVIDIA/nccl: HEAD of 2026 for `nccl`, the
// v2.8.4-1 tag for `nccl_2_8`). Latencies in us, bandwidths in GB/s. Indices: algorithm (tree,
// ring, nvls), protocol (LL, LL128, Simple), hardware (NVLink, network).
enum Algo { kTree = 0, kRing = 1, kNvls = 2, kNvlsTree = 3 };
enum Hw { kNvlink = 0, kNet = 1 };

struct Constants {
  double base[4][3];
  double hw[2][4][3];
  double ll_max[4][3];  ///< [generation or CPU row][nodes index]
  double tree_max_per_channel[4][3];
  double ring_ll128_max_per_channel[4];  ///< (2.8: per collective; see ll128_max_2_8)
  double tree_ll128_max_per_channel[4][3];
  double nvls_tree_max_per_channel[4][3];
  double tree_correction[3][24];
  int tree_correction_sizes;
};

const Constants kCurrent = {
    {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}},
    {{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 25}, {0, 0, 25}},
     {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 18}, {0, 0, 20.9}}},
    {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}},
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}},
    {20.0, 20.0, 36.7, 40.0},
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}},
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}},
    {{1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6,  .5,
      .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
     {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6,  .6,
      .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0, 1.0},
     {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
      .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}},
    23,
};

const Constants k2_8 = {
    {{4.4, 4.4, 0}, {3.6, 10.0, 8.4}, {0, 0, 0}, {0, 0, 0}},
    {{{.52, 1.25, 28}, {.47, 1.9, 3.4}, {0, 0, 0}, {0, 0, 0}},
     {{5.0, 8.5, 28}, {2.7, 4.0, 9.6}, {0, 0, 0}, {0, 0, 0}}},
    {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {39.0, 39.0, 20.4}, {39.0, 39.0, 20.4}},
    {{26.5, 18.5, 10.0}, {24.0, 22.5, 16.0}, {26.5, 18.5, 10.0}, {26.5, 18.5, 10.0}},
    {0, 0, 0, 0},
    {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
    {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
    {{1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
      .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
     {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
      .6,  .5,  .6,  .6,  .7,  .7, .8, .9, .9, .92, .92},
     {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}},
    23,
};

/// NCCL 2.8's LL128 limit per channel, per collective.
double ll128_max_2_8(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::broadcast:
      return 18.8;
    case CollectiveOp::reduce:
      return 12.0;
    case CollectiveOp::all_gather:
      return 18.3;
    case CollectiveOp::reduce_scatter:
      return 15.2;
    default:
      return 16.9;
  }
}

int log2_floor(double x) {
  int l = 0;
  for (auto n = static_cast<unsigned long long>(x); n >>= 1;) ++l;
  return l;
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace

GpuGeneration gpu_generation(std::string_view model) {
  std::string upper(model);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (contains(upper, "V100")) return GpuGeneration::volta;
  if (contains(upper, "A100") || contains(upper, "A800")) return GpuGeneration::ampere;
  if (contains(upper, "B100") || contains(upper, "B200") || contains(upper, "B300")) {
    return GpuGeneration::blackwell;
  }
  return GpuGeneration::hopper;
}

double nccl_estimate_seconds(TunerKind kind, const TunerInputs& in, Algorithm algorithm,
                             NcclProtocol protocol, double bytes) {
  if (kind == TunerKind::fastest || in.ranks < 2) return -1;
  const bool v28 = kind == TunerKind::nccl_2_8;
  const Constants& k = v28 ? k2_8 : kCurrent;
  const int p = static_cast<int>(protocol);
  const int gen = static_cast<int>(in.generation);
  const int nodes = std::max(1, in.nodes), ranks = in.ranks, channels = std::max(1, in.channels);
  const int nodes_index = nodes <= 2 ? nodes - 1 : 2;
  const double ppn = static_cast<double>(ranks) / nodes;
  const bool all_reduce = in.op == CollectiveOp::all_reduce;
  const bool rooted = in.op == CollectiveOp::broadcast || in.op == CollectiveOp::reduce;
  const bool gathers = in.op == CollectiveOp::all_gather || in.op == CollectiveOp::reduce_scatter;
  const int a = algorithm == Algorithm::ring        ? kRing
                : algorithm == Algorithm::tree      ? kTree
                : algorithm == Algorithm::nvls      ? kNvls
                : algorithm == Algorithm::nvls_tree ? kNvlsTree
                                                    : -1;
  if (a < 0) return -1;
  if (a == kTree && !all_reduce) return -1;
  if (a == kNvlsTree &&
      (v28 || !all_reduce || nodes < 2 || !in.nvls || protocol != NcclProtocol::simple ||
       channels < 2 || gen < static_cast<int>(GpuGeneration::hopper))) {
    return -1;
  }
  if (a == kNvls &&
      (v28 || !all_reduce || nodes > 1 || !in.nvls || protocol != NcclProtocol::simple ||
       channels < 2 || gen < static_cast<int>(GpuGeneration::hopper))) {
    return -1;
  }
  if (!all_reduce && !rooted && !gathers && a != kRing) return -1;
  // LL128: NCCL 2.8 enables it on Volta and Ampere only; later versions on Hopper too.
  if (protocol == NcclProtocol::ll128 && v28 && gen > static_cast<int>(GpuGeneration::ampere)) {
    return -1;
  }
  const int steps = all_reduce ? 2 * (ranks - 1) : gathers ? ranks - 1 : ranks;
  const int ll_row = nodes == 1
                         ? (v28 ? (gen == static_cast<int>(GpuGeneration::ampere) ? 1 : 0) : gen)
                         : (in.amd_cpu ? 1 : 0);
  const double ll_max = k.ll_max[ll_row][nodes_index];
  // A multi-node graph's search starts with equal intra- and inter-node speeds, each channel
  // bound by its NIC; only a tree's intra speed may then rise, to twice the inter one
  // (src/graph/search.cc, ncclTopoCompute). The tuner reads the intra speed up to two nodes.
  double per_channel = in.intra_channel_GBps;
  if (nodes > 1) {
    const double inter = std::min(in.intra_channel_GBps, in.inter_channel_GBps);
    per_channel = nodes > 2 || a != kTree ? inter : std::min(in.intra_channel_GBps, 2 * inter);
  }
  double bus = channels * per_channel;
  if (v28 && gen == static_cast<int>(GpuGeneration::ampere)) bus = std::min(bus, 235.0);
  const int tree_row = v28 ? (gen == static_cast<int>(GpuGeneration::ampere) ? 1 : 0) : gen;
  if (a == kNvls || a == kNvlsTree) {
    const double efficiency = gen == static_cast<int>(GpuGeneration::hopper) ? 0.85 : 0.74;
    double per = in.intra_channel_GBps * efficiency * (channels - 1.0) / channels * 2.0;
    if (a == kNvlsTree) {
      per = std::min({per, in.inter_channel_GBps * (nodes <= 2 ? 2 : 1),
                      k.nvls_tree_max_per_channel[gen][nodes_index]});
    }
    bus = channels * per;
  }
  if (a == kRing && protocol == NcclProtocol::ll) {
    const double factor =
        v28 ? (nodes > 1 || all_reduce || in.op == CollectiveOp::reduce ? 0.25 : 1.0 / 3) : 0.5;
    bus = std::min(ll_max, bus * factor);
  }
  if (a == kRing && protocol == NcclProtocol::ll128) {
    bus = v28 ? std::min(bus * (ppn < 2 ? 0.7 : 0.92), ll128_max_2_8(in.op) * channels)
              : std::min(bus * 0.92, channels * k.ring_ll128_max_per_channel[gen]);
  }
  if (a == kTree)
    bus = std::min(bus * 0.92, channels * k.tree_max_per_channel[tree_row][nodes_index]);
  if (a == kTree && protocol == NcclProtocol::ll) bus = std::min(bus / 3.8, ll_max);
  if (a == kTree && protocol == NcclProtocol::ll128) {
    bus = v28 ? std::min(bus * (nodes == 1 ? 7.0 / 9 : 0.915), ll128_max_2_8(in.op) * channels)
              : std::min(bus * (nodes == 1 ? 7.0 / 9 : 120.0 / 128),
                         channels * k.tree_ll128_max_per_channel[gen][nodes_index]);
  }
  double bandwidth = bus * (a == kTree ? 0.5 : static_cast<double>(ranks) / steps);

  // Latency.
  const int algo_row = a;
  double intra = k.hw[kNvlink][algo_row][p];
  double inter = (!v28 && ppn == 1) ? k.hw[kNet][kTree][p] : k.hw[kNet][algo_row][p];
  if (v28 && nodes > 1 && protocol == NcclProtocol::ll) intra *= 1.8;
  double latency = k.base[algo_row][p];
  if (a == kRing) {
    if (rooted) {
      // Rings of several nodes are not NCCL's "same channels": every step is charged, and
      // Simple's step at the tree's (chunk-sized) latency.
      const int hw = nodes > 1 ? kNet : kNvlink;
      if (nodes == 1) {
        latency += k.hw[hw][kRing][p];
      } else {
        latency +=
            steps * (protocol == NcclProtocol::simple ? k.hw[hw][kTree][p] : k.hw[hw][kRing][p]);
      }
    } else {
      if (!v28 && nodes > 1) {
        double overhead = in.amd_cpu ? 2.0 : 1.0;
        if (protocol == NcclProtocol::simple) overhead *= 3;
        intra = std::max(intra, overhead);
      }
      const int inter_steps = nodes == 1 ? 0 : all_reduce ? 2 * (nodes - 1) : nodes - 1;
      latency += (steps - inter_steps) * intra + inter_steps * inter;
    }
  } else if (a == kTree) {
    latency += 2 * ((ppn - 1) * intra + log2_floor(nodes) * inter);
  } else if (a == kNvlsTree) {
    latency += intra + 2 * log2_floor(nodes) * inter;
  } else {
    latency = intra;  // NVLS, one node
  }
  if (bandwidth <= 0) return -1;

  // Per-call corrections.
  const double chunks64 = std::floor(bytes / 64);
  const int log_size = chunks64 >= 1 ? log2_floor(chunks64) : (v28 ? 0 : -1);
  if (a == kTree && log_size >= 0 && log_size < k.tree_correction_sizes) {
    bandwidth *= k.tree_correction[p][log_size];
  }
  if (a == kRing && protocol == NcclProtocol::simple && nodes > 1 && all_reduce) {
    if (v28 && bytes >= ranks / 16.0 * 65536) latency *= 1.9;
    if (!v28 && bytes / (channels * ranks) >= 64) {
      latency *= gen < static_cast<int>(GpuGeneration::ampere) ? 1.9 : 1.4;
    }
  }
  return (latency + bytes / (1000 * bandwidth)) * 1e-6;
}

}  // namespace prismsim
