#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/diagnostics.hpp"
#include "nccl_fit.hpp"
#include "nccl_log.hpp"
#include "near.hpp"
#include "stats/nccl_table.hpp"

using prismsim::testing::Near;

using namespace prismsim;

namespace {

/// A number as nccl-tests prints it with `format`, read back.
double printed(const std::string& text) { return std::stod(text); }

/// Two nodes of 4 GPUs on a one-tier fabric; protocols LL, LL128, Simple; the fastest choice.
PlatformSpec synthetic_platform() {
  PlatformSpec p;
  p.name = "synthetic";
  p.gpu.model = "A100-SXM4-40GB";
  p.gpu.memory_bandwidth_Bps = 1.5e12;
  p.gpus_per_node = 4;
  p.nvlink = {100e9, 0.8e-6, 0.7};
  p.nic = {25e9, 3e-6, 0.55};
  p.fabric.levels = 1;
  p.fabric.radix = 64;
  p.fabric.port_bandwidth_Bps = 25e9;
  p.fabric.hop_latency_s = 0.3e-6;
  p.datacenters = {{"dc", 2}};
  p.collectives.channels = 2;
  p.collectives.launch_latency_s = 4e-6;
  p.collectives.tuner = TunerKind::fastest;
  p.collectives.protocols = {{"LL", 0.05, 2e-6, 1e-6, true},
                             {"LL128", 0.6, 8e-6, 1e-6, true},
                             {"Simple", 1.0, 20e-6, 0.5e-6, false}};
  return p;
}

/// Logs of `op` on `ranks` GPUs timed by `platform`'s model, 1 KiB to 256 MiB by factors of 4.
NcclLog synthetic_log(const PlatformSpec& platform, CollectiveOp op, int ranks) {
  NcclLog log;
  log.path = fmt::format("{}_{}gpu", to_string(op), ranks);
  log.op = op;
  log.ranks = ranks;
  log.nodes = (ranks + platform.gpus_per_node - 1) / platform.gpus_per_node;
  for (double bytes = 1024; bytes <= 256.0 * 1024 * 1024; bytes *= 4) {
    NcclMeasurement m;
    m.bytes = bytes;
    log.points.push_back(m);
  }
  const auto times = predict_log(platform, log);
  for (size_t i = 0; i < times.size(); ++i) log.points[i].time_s = times[i];
  return log;
}

/// Every knob but `free` is fixed.
std::vector<std::string> all_but(const std::vector<std::string>& free) {
  std::vector<std::string> fixed;
  for (const auto& name : collective_knob_names()) {
    if (std::find(free.begin(), free.end(), name) == free.end()) fixed.push_back(name);
  }
  return fixed;
}

}  // namespace

TEST_CASE("a simulated nccl-tests table reads back with the measured-log reader, field for field") {
  for (CollectiveOp op :
       {CollectiveOp::all_reduce, CollectiveOp::broadcast, CollectiveOp::all_gather}) {
    for (bool algorithm_column : {false, true}) {
      CAPTURE(to_string(op));
      CAPTURE(algorithm_column);
      NcclTableSpec spec;
      spec.op = op;
      spec.ranks = 16;
      spec.gpus_per_node = 8;
      spec.gpu_model = "A100-SXM4-40GB";
      spec.title = "prismsim collective: test";
      spec.min_bytes = 1024;
      spec.max_bytes = 1 << 30;
      spec.algorithm_column = algorithm_column;
      const std::vector<NcclRow> rows = {{1024, 12.3456e-6, 0, "tree/LL/step"},
                                         {65536, 87.654e-6, 80.5e-6, "tree/LL/step"},
                                         {16777216, 1234.5678e-6, 0, "ring/Simple/coarse"},
                                         {1073741824, 23456.7e-6, 0, "ring/Simple/coarse"}};
      const std::string text = nccl_table(spec, rows);
      const NcclLog log = parse_nccl_log(text, fmt::format("{}_sim.log", to_string(op)));
      CHECK(log.op == op);
      CHECK(log.ranks == 16);
      CHECK(log.nodes == 2);  // read back as inter-node
      REQUIRE(log.rank_hosts.size() == 16);
      CHECK(log.rank_hosts[7] == nccl_host_name(0));
      CHECK(log.rank_hosts[8] == nccl_host_name(1));
      REQUIRE(log.points.size() == rows.size());
      double busbw_sum = 0;
      for (size_t i = 0; i < rows.size(); ++i) {
        const NcclMeasurement& m = log.points[i];
        CAPTURE(i);
        CHECK(m.bytes == rows[i].bytes);
        const double elements = rows[i].bytes / 4;
        CHECK(m.count ==
              static_cast<int64_t>(op == CollectiveOp::all_gather ? elements / 16 : elements));
        CHECK(m.type == "float");
        CHECK(m.redop == (op == CollectiveOp::all_reduce ? "sum" : "none"));
        CHECK(m.root == (op == CollectiveOp::broadcast ? "0" : "-1"));
        const double in_place =
            rows[i].in_place_seconds > 0 ? rows[i].in_place_seconds : rows[i].seconds;
        const std::pair<const NcclResult*, double> halves[] = {{&m.out_of_place, rows[i].seconds},
                                                               {&m.in_place, in_place}};
        for (const auto& [half, seconds] : halves) {
          CHECK(half->time_s == Near{printed(nccl_time_text(seconds * 1e6)) * 1e-6, 1e-12});
          const double algbw = rows[i].bytes / seconds / 1e9;
          const double busbw = algbw * bus_factor(op, 16);
          CHECK(half->algbw_GBps == Near{printed(fmt::format("{:.2f}", algbw)), 1e-12});
          CHECK(half->busbw_GBps == Near{printed(fmt::format("{:.2f}", busbw)), 1e-12});
          CHECK(half->wrong == "N/A");
          busbw_sum += busbw;
        }
        CHECK(m.time_s == m.out_of_place.time_s);
        CHECK(m.in_place_time_s == m.in_place.time_s);
      }
      CHECK(log.avg_busbw_GBps == Near{busbw_sum / (2.0 * rows.size()), 1e-5});
    }
  }
}

TEST_CASE("the measured-log reader reads old and new nccl-tests headers, with MPI tags") {
  // Old format: no root column, "error" for "#wrong", three-space rank lines.
  const std::string old_format =
      "# nThread 1 nGpus 1 minBytes 4 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 100\n"
      "#   Rank  0 Pid 1 on      a0008 device  0 [0x27] A100-SXM4-40GB\n"
      "#   Rank  1 Pid 2 on      a0009 device  0 [0x27] A100-SXM4-40GB\n"
      "#       size         count    type    root     time   algbw   busbw  error     time   algbw "
      "  busbw  error\n"
      "           4             1   float       0     7.79    0.00    0.00  0e+00     7.46    0.00 "
      "   0.00  0e+00\n"
      "# Avg bus bandwidth    : 0.5 \n";
  const NcclLog old_log = parse_nccl_log(old_format, "broadcast_2gpu.log");
  CHECK(old_log.op == CollectiveOp::broadcast);
  CHECK(old_log.nodes == 2);
  REQUIRE(old_log.points.size() == 1);
  CHECK(old_log.points[0].root == "0");
  CHECK(old_log.points[0].redop.empty());
  CHECK(old_log.points[0].out_of_place.wrong == "0e+00");
  CHECK(old_log.points[0].in_place.time_s == Near{7.46e-6, 1e-12});
  CHECK(old_log.avg_busbw_GBps == 0.5);
  // New format with MPI tags and a 0-byte row (skipped).
  const std::string tagged =
      "[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw "
      "#wrong     time   algbw   busbw #wrong\n"
      "[1,0]<stdout>:           0             0     float     sum      -1    15.51    0.00    0.00 "
      "     0    15.52    0.00    0.00      0\n"
      "[1,0]<stdout>:    67108864      16777216     float     sum      -1    996.0   67.38  126.33 "
      "     0   1001.7   66.99  125.62      0\n";
  const NcclLog log = parse_nccl_log(tagged, "all_reduce_16gpu.log");
  REQUIRE(log.points.size() == 1);
  CHECK(log.points[0].time_s == Near{996.0e-6, 1e-12});
  CHECK(log.points[0].in_place.busbw_GBps == 125.62);
  CHECK(log.points[0].out_of_place.wrong == "0");
}

TEST_CASE("the measured-log reader refuses counts that are not whole numbers of elements") {
  // Found by fuzz_nccl_log: a count of 1e51 was cast to an integer (undefined behaviour).
  const std::string header =
      "#       size         count      type   redop    root     time   algbw   busbw "
      "#wrong     time   algbw   busbw #wrong\n";
  for (const std::string count : {"1e51", "2.5", "-4"}) {
    const std::string text = header + "    1024    " + count +
                             "  float  sum  -1  10.0  0.1  0.2  0  10.1  0.1  0.2  0\n";
    try {
      parse_nccl_log(text, "all_reduce_8gpu.log");
      FAIL("accepted count " << count);
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find("all_reduce_8gpu.log:2:5: error: the count column") !=
            std::string::npos);
    }
  }
}

TEST_CASE("a bus-bandwidth table gives one log per GPU count, filtered by column") {
  const std::string path = "busbw_table_test.csv";
  {
    std::ofstream out(path);
    out << "system,gpus,busbw_GBps,busbw_nvls_off_GBps\nA,4,300,300\nA,8,350,280\nB,8,100,90\n";
  }
  const auto logs = read_busbw_table(
      path, {"system=A", "size=1048576", "busbw=busbw_nvls_off_GBps"}, CollectiveOp::all_reduce);
  std::remove(path.c_str());
  REQUIRE(logs.size() == 2);
  CHECK(logs[0].ranks == 4);
  CHECK(logs[1].ranks == 8);
  REQUIRE(logs[1].points.size() == 1);
  // busbw 280 GB/s on 8 GPUs: time = size x 2 (n - 1) / n / busbw.
  CHECK(logs[1].points[0].time_s == Near{1048576 * 1.75 / 280e9, 1e-12});
}

TEST_CASE("the collective fit recovers known parameters from synthetic logs") {
  const PlatformSpec truth = synthetic_platform();
  const std::vector<NcclLog> logs = {synthetic_log(truth, CollectiveOp::all_reduce, 4),
                                     synthetic_log(truth, CollectiveOp::all_reduce, 8),
                                     synthetic_log(truth, CollectiveOp::broadcast, 8)};
  const std::vector<std::string> free = {"node.nvlink.efficiency", "node.nic.efficiency",
                                         "node.nic.latency",
                                         "collectives.protocols.Simple.base_latency"};
  // The fit starts from its own fixed values (0.8, 0.8, 2 us, 20 or 50 us), not from the truth.
  const PlatformSpec fitted = fit_collectives(truth, logs, all_but(free));
  CHECK(fitted.nvlink.efficiency == Near{0.7, 0.01});
  CHECK(fitted.nic.efficiency == Near{0.55, 0.01});
  CHECK(fitted.nic.latency_s == Near{3e-6, 0.05});
  CHECK(fitted.collectives.protocols[2].base_latency_s == Near{20e-6, 0.02});
  for (const auto& log : logs) {
    const BusbwErrors e = busbw_errors(log, predict_log(fitted, log));
    CHECK(e.large < 0.005);
    CHECK(e.small < 0.005);
  }
}

TEST_CASE("leave-one-group-out predicts a left-out GPU count from the others") {
  const PlatformSpec truth = synthetic_platform();
  const std::vector<NcclLog> logs = {synthetic_log(truth, CollectiveOp::all_reduce, 2),
                                     synthetic_log(truth, CollectiveOp::all_reduce, 4),
                                     synthetic_log(truth, CollectiveOp::all_reduce, 8)};
  const auto folds = leave_one_group_out(truth, logs, {"2 GPUs", "4 GPUs", "8 GPUs"},
                                         all_but({"node.nvlink.efficiency"}));
  REQUIRE(folds.size() == 3);
  for (const auto& fold : folds) {
    CAPTURE(fold.group);
    REQUIRE(fold.logs.size() == 1);
    CHECK(fold.fitted.nvlink.efficiency == Near{0.7, 0.01});
    const BusbwErrors e = busbw_errors(logs[fold.logs[0]], fold.predicted[0]);
    CHECK(e.large < 0.01);
  }
  // One group: nothing to leave out.
  CHECK(leave_one_group_out(truth, logs, {"a", "a", "a"}).empty());
}

TEST_CASE("knobs follow the data: NIC only with several nodes, local copy only with one GPU") {
  const PlatformSpec p = with_fit_protocols(synthetic_platform());
  const auto names = [&](const std::vector<NcclLog>& logs) {
    std::vector<std::string> out;
    for (const auto& k : collective_knobs(p, logs, {})) out.push_back(k.name);
    return out;
  };
  const auto has = [](const std::vector<std::string>& v, const char* name) {
    return std::find(v.begin(), v.end(), name) != v.end();
  };
  NcclLog one_node;
  one_node.ranks = 4;
  NcclLog two_nodes;
  two_nodes.ranks = 8;
  NcclLog one_gpu;
  one_gpu.ranks = 1;
  CHECK_FALSE(has(names({one_node}), "node.nic.efficiency"));
  CHECK(has(names({two_nodes}), "node.nic.efficiency"));
  CHECK(has(names({one_node}), "node.nvlink.efficiency"));
  CHECK_FALSE(has(names({one_node}), "collectives.local_copy_efficiency"));
  CHECK(has(names({one_gpu}), "collectives.local_copy_efficiency"));
  CHECK_FALSE(has(names({one_node}), "collectives.nvls.efficiency"));  // no node.nvls
}

TEST_CASE("a log predictor's cached link loads cost as a fresh prediction for other parameters") {
  const PlatformSpec truth = synthetic_platform();
  for (CollectiveOp op : {CollectiveOp::all_reduce, CollectiveOp::broadcast}) {
    const NcclLog log = synthetic_log(truth, op, 8);
    LogPredictor predictor(truth, log);
    predictor.predict(truth);  // fills the cache (predict_log is a fresh predictor: no check)
    PlatformSpec other = truth;
    other.nvlink.efficiency = 0.4;
    other.nic.efficiency = 0.9;
    other.nic.latency_s = 7e-6;
    other.collectives.protocols[1].step_latency_s = 3e-6;
    CHECK(predictor.predict(other) == predict_log(other, log));
  }
}
