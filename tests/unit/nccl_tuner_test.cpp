#include "collectives/nccl_tuner.hpp"

#include <doctest/doctest.h>

#include "near.hpp"

using prismsim::testing::Near;

using namespace prismsim;

namespace {

/// A communicator of `nodes` nodes of 8 A100s, 4 channels, NVLink 60 GB/s and NICs 24 GB/s
/// per channel (as NCCL 2.8's topology search finds them on a node of four 200 Gb/s NICs).
TunerInputs a100(int nodes) {
  TunerInputs in;
  in.op = CollectiveOp::all_reduce;
  in.nodes = nodes;
  in.ranks = 8 * nodes;
  in.channels = 4;
  in.generation = GpuGeneration::ampere;
  in.intra_channel_GBps = 60;
  in.inter_channel_GBps = 24;
  return in;
}

/// NCCL's time in us for `bytes` at `latency_us` and a bandwidth of `GBps`.
double us(double latency_us, double bytes, double GBps) {
  return (latency_us + bytes / (1000 * GBps)) * 1e-6;
}

}  // namespace

TEST_CASE("NCCL 2.8's ring estimate on one node: the channels' NVLink bandwidth, intra latencies") {
  // tuning.cc at v2.8.4-1: Simple bus bandwidth = channels x speed (4 x 60, capped at 235 on
  // Ampere), algorithm bandwidth x ranks / steps; latency base 8.4 + 14 steps x 3.4 us.
  const TunerInputs in = a100(1);
  const double S = 64e6;
  CHECK(nccl_estimate_seconds(TunerKind::nccl_2_8, in, Algorithm::ring, NcclProtocol::simple, S) ==
        Near{us(8.4 + 14 * 3.4, S, 235 * 8.0 / 14), 1e-12});
}

TEST_CASE(
    "NCCL 2.8 on two nodes: a ring's channels run at the NIC's speed, a tree's at up to twice") {
  // A multi-node graph's search starts with equal intra- and inter-node speeds, bound by the
  // NIC; only trees may raise the intra speed, to twice the inter one (search.cc). Up to two
  // nodes the tuner reads the intra speed, so the ring's is the NIC's, not NVLink's.
  const TunerInputs in = a100(2);
  const double S = 64e6;
  // Ring Simple: 4 x 24 = 96 GB/s bus, x 16 / 30; latency 8.4 + 28 x 3.4 + 2 x 9.6, x 1.9 on
  // several nodes from ranks / 16 x 64 KiB.
  CHECK(nccl_estimate_seconds(TunerKind::nccl_2_8, in, Algorithm::ring, NcclProtocol::simple, S) ==
        Near{us((8.4 + 28 * 3.4 + 2 * 9.6) * 1.9, S, 96 * 16.0 / 30), 1e-12});
  // Tree Simple: 4 x min(60, 2 x 24) = 192, x 0.92, capped at 4 x 22.5 (Ampere, two nodes); half
  // of it, times the correction of this size (10^6 lines of 64 B: index 19, 0.7); latency 2 (7 x 28
  // + 28).
  CHECK(nccl_estimate_seconds(TunerKind::nccl_2_8, in, Algorithm::tree, NcclProtocol::simple, S) ==
        Near{us(2 * (7 * 28 + 28), S, 90 * 0.5 * 0.7), 1e-12});
}

TEST_CASE("NCCL 2.8 on more than two nodes: every channel at the inter-node speed") {
  TunerInputs in = a100(4);
  const double S = 64e6;
  CHECK(nccl_estimate_seconds(TunerKind::nccl_2_8, in, Algorithm::ring, NcclProtocol::simple, S) ==
        Near{us((8.4 + 56 * 3.4 + 6 * 9.6) * 1.9, S, 96 * 32.0 / 62), 1e-12});
  // A NIC faster than a channel's NVLink share: the slower bounds the channel.
  in.inter_channel_GBps = 100;
  CHECK(nccl_estimate_seconds(TunerKind::nccl_2_8, in, Algorithm::ring, NcclProtocol::simple, S) ==
        Near{us((8.4 + 56 * 3.4 + 6 * 9.6) * 1.9, S, 235 * 32.0 / 62), 1e-12});
}
