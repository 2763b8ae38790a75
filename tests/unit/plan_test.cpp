#include "collectives/plan.hpp"

#include <doctest/doctest.h>

#include <map>
#include <tuple>
#include <utility>

#include "core/seeds.hpp"
#include "near.hpp"

using prismsim::testing::Near;

using namespace prismsim;

namespace {

/// A group of `nodes` nodes with `per_node` members each, in node order.
GroupLayout layout(int nodes, int per_node) {
  GroupLayout l;
  for (int n = 0; n < nodes; ++n) {
    for (int s = 0; s < per_node; ++s) {
      l.node.push_back(n);
      l.local.push_back(s);
    }
  }
  return l;
}

/// Checks a plan and returns the bytes each position sends.
/// Coarse form: messages per directed edge match. Step form: executed symbolically (a lane's step
/// runs once its receives have arrived, then sends), every lane must finish and every message be
/// received: the plan cannot deadlock.
std::vector<double> check_plan(const CollectivePlan& plan, int n, bool coarse) {
  std::vector<double> sent(static_cast<size_t>(n), 0.0);
  CommStep step;
  if (coarse) {
    std::map<std::pair<int, int>, int> balance;
    for (int pos = 0; pos < n; ++pos) {
      for (int p = 0; p < plan.phases(); ++p) {
        plan.phase(pos, p, step);
        for (const Send& s : step.sends) {
          REQUIRE(s.peer != pos);
          ++balance[{pos, s.peer}];
          sent[static_cast<size_t>(pos)] += s.bytes;
        }
        for (int peer : step.recvs) --balance[{peer, pos}];
      }
    }
    for (const auto& entry : balance) {  // (clang 14's CAPTURE cannot take structured bindings)
      const auto& edge = entry.first;
      const int count = entry.second;
      CAPTURE(edge.first);
      CAPTURE(edge.second);
      CHECK(count == 0);
    }
    return sent;
  }
  std::map<std::tuple<int, int, int>, int> in_flight;  // (from, to, lane's mailboxes) -> messages
  // One-lane plans run with blocking sends: a step posts its sends only once every message this
  // rank sent in the previous step has been received.
  const bool blocking_sends = plan.lanes() == 1;
  std::vector<int> unreceived(static_cast<size_t>(n), 0);  // per sender, messages in flight
  std::vector<std::vector<int>> next(static_cast<size_t>(n),
                                     std::vector<int>(static_cast<size_t>(plan.lanes()), 0));
  std::vector<std::vector<bool>> received(
      static_cast<size_t>(n), std::vector<bool>(static_cast<size_t>(plan.lanes()), false));
  bool progress = true;
  while (progress) {
    progress = false;
    for (int pos = 0; pos < n; ++pos) {
      for (int lane = 0; lane < plan.lanes(); ++lane) {
        const int mailboxes = plan.lane_mailboxes(lane);
        int& index = next[static_cast<size_t>(pos)][static_cast<size_t>(lane)];
        auto got = received[static_cast<size_t>(pos)][static_cast<size_t>(lane)];
        while (index < plan.step_count(pos, lane)) {
          plan.step(pos, lane, index, step);
          if (!got) {
            std::map<int, int> needed;
            for (int peer : step.recvs) ++needed[peer];
            bool ready = true;
            for (const auto& [peer, count] : needed)
              ready = ready && in_flight[{peer, pos, mailboxes}] >= count;
            if (!ready) break;
            for (const auto& [peer, count] : needed) {
              in_flight[{peer, pos, mailboxes}] -= count;
              unreceived[static_cast<size_t>(peer)] -= count;
            }
            got = true;
            progress = true;
          }
          if (blocking_sends && unreceived[static_cast<size_t>(pos)] > 0) break;
          for (const Send& s : step.sends) {
            REQUIRE(s.peer != pos);
            ++in_flight[{pos, s.peer, mailboxes}];
            ++unreceived[static_cast<size_t>(pos)];
            sent[static_cast<size_t>(pos)] += s.bytes;
          }
          got = false;
          ++index;
          progress = true;
        }
        received[static_cast<size_t>(pos)][static_cast<size_t>(lane)] = got;
      }
    }
  }
  for (int pos = 0; pos < n; ++pos) {
    for (int lane = 0; lane < plan.lanes(); ++lane) {
      CAPTURE(pos);
      CAPTURE(lane);
      CHECK(next[static_cast<size_t>(pos)][static_cast<size_t>(lane)] ==
            plan.step_count(pos, lane));
    }
  }
  for (const auto& [edge, count] : in_flight) CHECK(count == 0);
  return sent;
}

}  // namespace

TEST_CASE("every plan delivers every message and cannot deadlock") {
  uint64_t state = 3;
  for (int trial = 0; trial < 40; ++trial) {
    state = splitmix64(state);
    const int nodes = 1 + static_cast<int>(state % 5);
    const int per_node = 1 + static_cast<int>((state >> 8) % 8);
    if (nodes * per_node < 2) continue;
    const double bytes = 1024.0 * static_cast<double>(1 + (state >> 16) % 5000);
    const CollectivePlanner planner(layout(nodes, per_node),
                                    1 + static_cast<int>((state >> 32) % 8),
                                    1 + static_cast<int>((state >> 48) % 16));
    for (size_t o = 0; o < collective_op_names().size(); ++o) {
      const auto op = static_cast<CollectiveOp>(o);
      for (Algorithm algorithm : algorithms_for(op)) {
        if (!planner.supports(op, algorithm, true)) continue;
        for (bool coarse : {false, true}) {
          CAPTURE(nodes);
          CAPTURE(per_node);
          CAPTURE(to_string(op));
          CAPTURE(to_string(algorithm));
          CAPTURE(coarse);
          const int root =
              static_cast<int>((state >> 40) % static_cast<uint64_t>(nodes * per_node));
          const auto plan = planner.plan(op, algorithm, bytes, root);
          const auto sent = check_plan(*plan, nodes * per_node, coarse);
          // Both forms move the same bytes.
          const auto other = check_plan(*plan, nodes * per_node, !coarse);
          for (size_t i = 0; i < sent.size(); ++i) CHECK(sent[i] == Near{other[i]});
        }
      }
    }
  }
}

TEST_CASE("ring plans move the textbook volumes") {
  const int n = 6;
  const double bytes = 6e6;
  const CollectivePlanner planner(layout(2, 3), 3, 2);
  for (bool coarse : {false, true}) {
    CAPTURE(coarse);
    for (double sent :
         check_plan(*planner.plan(CollectiveOp::all_reduce, Algorithm::ring, bytes), n, coarse)) {
      CHECK(sent == Near{2.0 * (n - 1) / n * bytes});
    }
    for (double sent :
         check_plan(*planner.plan(CollectiveOp::all_gather, Algorithm::ring, bytes), n, coarse)) {
      CHECK(sent == Near{(n - 1.0) / n * bytes});
    }
    const auto bcast =
        check_plan(*planner.plan(CollectiveOp::broadcast, Algorithm::ring, bytes, 2), n, coarse);
    double total = 0;
    for (double sent : bcast) total += sent;
    CHECK(total == Near{(n - 1) * bytes});  // every member but the root receives it
    for (double sent :
         check_plan(*planner.plan(CollectiveOp::all_to_all, Algorithm::direct, bytes), n, coarse)) {
      CHECK(sent == Near{(n - 1.0) / n * bytes});
    }
  }
}

TEST_CASE("ring channels enter each node at a different member") {
  const CollectivePlanner planner(layout(2, 4), 4, 4);
  for (int c = 0; c < 4; ++c) {
    CAPTURE(c);
    const auto& order = planner.ring(c);
    REQUIRE(order.size() == 8);
    CHECK(order[0] == c);      // node 0 entered at slot c
    CHECK(order[4] == 4 + c);  // node 1 entered at slot c
  }
}

TEST_CASE("hierarchical and nvls need the right group shape") {
  CHECK(CollectivePlanner(layout(2, 4), 1, 1)
            .supports(CollectiveOp::all_reduce, Algorithm::hierarchical, false));
  CHECK_FALSE(CollectivePlanner(layout(1, 8), 1, 1)
                  .supports(CollectiveOp::all_reduce, Algorithm::hierarchical, false));
  CHECK(CollectivePlanner(layout(1, 8), 1, 1)
            .supports(CollectiveOp::all_reduce, Algorithm::nvls, true));
  CHECK_FALSE(CollectivePlanner(layout(1, 8), 1, 1)
                  .supports(CollectiveOp::all_reduce, Algorithm::nvls, false));
  CHECK_FALSE(CollectivePlanner(layout(2, 4), 1, 1)
                  .supports(CollectiveOp::all_reduce, Algorithm::nvls, true));
  CHECK_FALSE(CollectivePlanner(layout(2, 4), 1, 1)
                  .supports(CollectiveOp::all_gather, Algorithm::tree, false));
}
