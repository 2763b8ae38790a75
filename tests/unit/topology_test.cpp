#include "platform/topology.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "near.hpp"

using prismsim::testing::Near;

using namespace prismsim;

namespace {

PlatformSpec three_tier(int nodes_a, int nodes_b) {
  PlatformSpec p;
  p.name = "t";
  p.gpus_per_node = 4;
  p.nvlink = {400e9, 1e-6};
  p.nic = {50e9, 2e-6};
  p.fabric.levels = 3;
  p.fabric.radix = 8;
  p.fabric.oversubscription = {1.0, 3.0};
  p.fabric.port_bandwidth_Bps = 50e9;
  p.fabric.hop_latency_s = 1e-7;
  p.datacenters = {{"a", nodes_a}, {"b", nodes_b}};
  p.wan = {{"a", "b", {10e9, 1e-3}}};
  return p;
}

double min_bandwidth(const Topology& t, const std::vector<int>& path) {
  double bw = 1e300;
  for (int link : path) bw = std::min(bw, t.links()[static_cast<size_t>(link)].bandwidth_Bps);
  return bw;
}

}  // namespace

TEST_CASE("fat-tree tiers hold the product of their down ports") {
  const PlatformSpec p = three_tier(1, 1);
  CHECK(p.fabric.down_ports(1) == 4);  // 1:1 leaf
  CHECK(p.fabric.down_ports(2) == 6);  // 3:1 aggregation
  CHECK(p.fabric.down_ports(3) == 8);  // top tier: all ports down
  CHECK(p.fabric.nics_below(2, 4) == 24);
  CHECK(p.fabric.capacity(4) == 192);
}

TEST_CASE("routes take NVLink inside a node and the fabric across nodes") {
  const Topology t(three_tier(12, 2));
  CHECK(t.gpu_count() == 56);
  std::vector<int> path;

  SUBCASE("same node: NVLink up then down") {
    t.route(1, 2, path);
    REQUIRE(path.size() == 2);
    CHECK(t.link_name(path[0]) == "gpu1-nvlink-up");
    CHECK(t.link_name(path[1]) == "gpu2-nvlink-down");
    CHECK(t.route_latency(1, 2) == Near{1e-6});
    CHECK(min_bandwidth(t, path) == Near{400e9});
  }
  SUBCASE("neighbouring leaf switches: NIC, leaf uplink and downlink, NIC") {
    // GPUs 0..3 are node 0; a leaf holds 4 NICs, so node 1 is on the next leaf.
    t.route(3, 4, path);
    REQUIRE(path.size() == 4);  // nic, leaf up bundle, leaf down bundle, nic
    CHECK(t.route_latency(3, 4) == Near{2e-6 + 3e-7});
  }
  SUBCASE("other pod: up to the top tier, oversubscribed aggregation bundle") {
    t.route(0, 30, path);  // pod of 24 NICs: GPU 30 is in pod 1
    REQUIRE(path.size() == 6);
    CHECK(t.link_name(path[2]) == "a-tier2-group0-up");
    // The aggregation tier's uplink carries 24 NICs x 50 GB/s / 3.
    CHECK(t.links()[static_cast<size_t>(path[2])].bandwidth_Bps == Near{400e9});
    CHECK(t.route_latency(0, 30) == Near{2e-6 + 5e-7});
    // The leaf tier is non-blocking (its 4 NICs can never fill its uplink): left out of the
    // simulated routes; the oversubscribed tier above, the NICs and the WAN stay.
    CHECK_FALSE(t.links()[static_cast<size_t>(path[1])].can_saturate);
    CHECK(t.link_name(path[1]) == "a-tier1-group0-up");
    CHECK(t.links()[static_cast<size_t>(path[2])].can_saturate);
    CHECK(t.links()[static_cast<size_t>(path[0])].can_saturate);
  }
  SUBCASE("other datacenter: through the top tier and the WAN link") {
    t.route(0, 50, path);
    REQUIRE(path.size() == 7);
    CHECK(t.link_name(path[3]) == "wan-a-b");
    CHECK(min_bandwidth(t, path) == Near{10e9});
    CHECK(t.route_latency(0, 50) == Near{2e-6 + 1e-3 + 6e-7});
    path.clear();
    t.route(50, 0, path);
    CHECK(t.link_name(path[3]) == "wan-b-a");
  }
}

TEST_CASE("locations count nodes across datacenters") {
  const Topology t(three_tier(2, 3));
  const GpuLocation where = t.locate(13);
  CHECK(where.datacenter == 1);
  CHECK(where.node == 3);
  CHECK(where.local == 1);
}

TEST_CASE("a leaf of a fat-tree takes whole nodes, its spare down ports stay unused") {
  PlatformSpec p = three_tier(12, 2);
  p.fabric.radix = 12;                     // 6 down ports at the leaf (1:1)
  CHECK(p.fabric.leaf_nics(4) == 4);       // one node of 4 NICs, two ports spare
  CHECK(p.fabric.leaf_nics(8) == 6);       // a node larger than a leaf spans leaves
  CHECK(p.fabric.nics_below(2, 4) == 36);  // 9 leaves below a 3:1 aggregation switch
  const Topology t(p);
  CHECK(t.nodes_per_leaf() == 1);
  std::vector<int> path;
  t.route(3, 4, path);  // node 0 to node 1: different leaves
  CHECK(path.size() == 4);
  p.fabric.kind = FabricKind::rail_optimized;
  CHECK(p.fabric.leaf_nics(4) == 6);  // one NIC of each of 6 nodes
}

TEST_CASE("the quotient by a shift of GPUs inside their nodes divides shared links") {
  const Topology t(three_tier(12, 2));    // 4 GPUs per node, one node per leaf
  auto shift_in_nodes = [&](int group) {  // GPU i -> i + 1 within consecutive blocks of `group`
    std::vector<int> image(static_cast<size_t>(t.gpu_count()));
    for (int gpu = 0; gpu < t.gpu_count(); ++gpu) {
      image[static_cast<size_t>(gpu)] = gpu / group * group + (gpu % group + 1) % group;
    }
    return image;
  };
  auto link = [&](const std::string& name) {
    for (int l = 0; l < static_cast<int>(t.links().size()); ++l) {
      if (t.link_name(l) == name) return static_cast<size_t>(l);
    }
    FAIL("no link " << name);
    return size_t{0};
  };
  SUBCASE("a shift of 4: every fabric and WAN link is fixed, the GPUs' own links move") {
    const auto q = t.quotient(shift_in_nodes(4));
    REQUIRE(q.has_value());
    CHECK(q->copies[link("a-tier2-group0-up")] == 4);
    CHECK(q->copies[link("a-tier1-group1-down")] == 4);
    CHECK(q->copies[link("wan-a-b")] == 4);
    CHECK(q->canonical[link("wan-a-b")] == static_cast<int>(link("wan-a-b")));
    CHECK(q->copies[link("gpu5-nic-up")] == 1);
    CHECK(q->canonical[link("gpu6-nic-up")] == static_cast<int>(link("gpu4-nic-up")));
    CHECK(q->canonical[link("gpu7-nvlink-down")] == static_cast<int>(link("gpu4-nvlink-down")));
  }
  SUBCASE("a shift of 2 inside nodes: order 2, fixed links carry 2 copies") {
    const auto q = t.quotient(shift_in_nodes(2));
    REQUIRE(q.has_value());
    CHECK(q->copies[link("a-tier1-group0-up")] == 2);
    CHECK(q->canonical[link("gpu3-nic-down")] == static_cast<int>(link("gpu2-nic-down")));
  }
  SUBCASE("a shift across leaves is no symmetry: it moves some of a leaf's flows only") {
    CHECK_FALSE(t.quotient(shift_in_nodes(8)).has_value());
  }
  SUBCASE("swapping two datacenters is refused (their WAN links' round trips differ)") {
    const Topology pair(three_tier(1, 1));  // one node in each datacenter
    std::vector<int> image(static_cast<size_t>(pair.gpu_count()));
    for (int gpu = 0; gpu < pair.gpu_count(); ++gpu) {
      image[static_cast<size_t>(gpu)] = (gpu + 4) % pair.gpu_count();
    }
    CHECK_FALSE(pair.quotient(image).has_value());
  }
  SUBCASE("the identity: every link is its own orbit, with one copy") {
    std::vector<int> image(static_cast<size_t>(t.gpu_count()));
    for (int gpu = 0; gpu < t.gpu_count(); ++gpu) image[static_cast<size_t>(gpu)] = gpu;
    const auto q = t.quotient(image);
    REQUIRE(q.has_value());
    CHECK(std::count(q->copies.begin(), q->copies.end(), 1) ==
          static_cast<int64_t>(t.links().size()));
  }
}
