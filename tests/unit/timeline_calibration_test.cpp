// Timeline calibration on synthetic timelines with known variance components at every level.
#include "timeline_calibration.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "core/diagnostics.hpp"
#include "sample_readers.hpp"
#include "timeline.hpp"

using namespace prismsim;

namespace {

/// Known sigmas of log durations per level.
struct Truth {
  double step = 0.05, gpu = 0.03, gpu_step = 0.02, microbatch = 0.10, forward = 0.04,
         backward = 0.06;
};

struct SyntheticSpec {
  int steps = 40, replicas = 32, stages = 2, microbatches = 8;
  Truth truth;
  double forward_s[2] = {0.15, 0.20};  ///< geometric means per stage
  double backward_s[2] = {0.30, 0.40};
  double gap_mean_s = 0.001;  ///< launch gaps: exponential of this mean
  double transfer_s = 0.05;   ///< all-gather transfer time
  double jitter_sigma = 0;    ///< lognormal jitter of the transfer
  uint64_t seed = 7;
};

/// A timeline: each rank runs its microbatches' forward then backward passes one after another,
/// each after a launch gap, then a data-parallel all-gather over its stage (members arrive at
/// different times and end together, last start + transfer).
Timeline synthetic(const SyntheticSpec& s) {
  Timeline t;
  t.path = "synthetic";
  t.optypes = {"forward-compute", "backward-compute", "params-all-gather"};
  std::mt19937_64 rng(s.seed);
  std::normal_distribution<double> z(0, 1);
  std::exponential_distribution<double> gap(1 / s.gap_mean_s);
  const int gpus = s.replicas * s.stages;
  std::vector<double> gpu_effect(static_cast<size_t>(gpus));
  for (double& g : gpu_effect) g = s.truth.gpu * z(rng);
  for (int step = 0; step < s.steps; ++step) {
    const double step_effect = s.truth.step * z(rng);
    std::vector<double> mb_effect(static_cast<size_t>(s.replicas * s.microbatches));
    for (double& m : mb_effect) m = s.truth.microbatch * z(rng);
    std::vector<double> end_of(static_cast<size_t>(gpus));
    for (int replica = 0; replica < s.replicas; ++replica) {
      for (int stage = 0; stage < s.stages; ++stage) {
        const int rank = replica * s.stages + stage;
        const double cell = s.truth.gpu_step * z(rng);
        double now = 0;
        for (int mb = 0; mb < s.microbatches; ++mb) {
          for (int dir = 0; dir < 2; ++dir) {
            const bool forward = dir == 0;
            const double nominal = forward ? s.forward_s[stage] : s.backward_s[stage];
            const double log_factor =
                step_effect + gpu_effect[static_cast<size_t>(rank)] + cell +
                mb_effect[static_cast<size_t>(replica * s.microbatches + mb)] +
                (forward ? s.truth.forward : s.truth.backward) * z(rng);
            now += gap(rng);
            TimelineOp op;
            op.rank = rank;
            op.stage = stage;
            op.replica = replica;
            op.step = step;
            op.microbatch = mb;
            op.optype = forward ? 0 : 1;
            op.kind = forward ? TimelineOpKind::forward : TimelineOpKind::backward;
            op.start_s = now;
            op.duration_s = nominal * std::exp(log_factor);
            now += op.duration_s;
            t.ops.push_back(op);
          }
        }
        end_of[static_cast<size_t>(rank)] = now;
      }
    }
    for (int stage = 0; stage < s.stages; ++stage) {
      double last = 0;
      for (int replica = 0; replica < s.replicas; ++replica) {
        last = std::max(last, end_of[static_cast<size_t>(replica * s.stages + stage)]);
      }
      const double transfer = s.transfer_s * std::exp(s.jitter_sigma * z(rng));
      for (int replica = 0; replica < s.replicas; ++replica) {
        const int rank = replica * s.stages + stage;
        TimelineOp op;
        op.rank = rank;
        op.stage = stage;
        op.replica = replica;
        op.step = step;
        op.optype = 2;
        op.kind = TimelineOpKind::collective;
        op.start_s = end_of[static_cast<size_t>(rank)];
        op.duration_s = last + transfer - op.start_s;  // waits for the last member, then transfers
        t.ops.push_back(op);
      }
    }
  }
  return t;
}

const LevelEstimate& level(const TimelineCalibration& c, const std::string& name) {
  for (const LevelEstimate& e : c.levels) {
    if (e.level == name) return e;
  }
  FAIL("no level " << name);
  return c.levels.front();
}

std::string temp_file(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / "prismsim-timeline-test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string input_error(const std::string& path) {
  try {
    read_timeline_csv(path);
  } catch (const InputError& e) {
    std::string all;
    for (const Diagnostic& d : e.diagnostics()) all += (all.empty() ? "" : "\n") + d.str();
    return all;
  }
  return "";
}

}  // namespace

TEST_CASE("timeline calibration recovers every level of a synthetic timeline") {
  // 40 steps x 64 GPUs (32 replicas x 2 stages) x 8 microbatches x 2 directions = 40,960 passes.
  // Standard errors of the sigmas: step about 1/sqrt(2 x 39) = 11% (40 steps), GPU 9% (64 GPUs),
  // GPU x step about 7% (it is a fifth of a cell mean's variance), microbatch and pass about 1%.
  // Tolerances are about 2.5 standard errors; the seed is fixed, so the test is deterministic.
  const SyntheticSpec spec;
  TimelineOptions options;
  options.bootstrap_replicates = 50;
  const TimelineCalibration c = calibrate_timelines({synthetic(spec)}, options);
  CHECK(c.passes == 40960);
  const Truth& t = spec.truth;
  const std::pair<const char*, std::pair<double, double>> expected[] = {
      {"step", {t.step, 0.30}},
      {"gpu", {t.gpu, 0.25}},
      {"gpu_step", {t.gpu_step, 0.20}},
      {"microbatch", {t.microbatch, 0.05}},
      {"forward_pass", {t.forward, 0.06}},
      {"backward_pass", {t.backward, 0.05}}};
  for (const auto& entry : expected) {
    const char* name = entry.first;  // not a structured binding: INFO's lambda (clang 14)
    const auto& value = entry.second;
    const LevelEstimate& e = level(c, name);
    INFO(name << ": sigma " << e.sigma << " [" << e.sigma_low << ", " << e.sigma_high << "]");
    CHECK(e.estimable);
    CHECK(std::fabs(e.sigma / value.first - 1) < value.second);
    CHECK(e.sigma_low <= e.sigma);
    CHECK(e.sigma_high >= e.sigma);
    CHECK(e.sigma_high > e.sigma_low);
    REQUIRE(e.fit.has_value());
  }
  // Stage times: geometric means of the passes (the nominal the factors multiply); the factors'
  // logs average 0 up to their standard errors (step: 0.05 / sqrt(40) = 0.8%).
  for (const StageTime& s : c.stages) {
    const double nominal = s.forward ? spec.forward_s[s.stage] : spec.backward_s[s.stage];
    CHECK(std::fabs(s.geomean_s / nominal - 1) < 0.03);
  }
  // Launch gaps: exponential of mean 1 ms before every pass but each rank's first of a step
  // (38,400 samples; the median's standard error is about 0.7%).
  REQUIRE(c.launch_gap.has_value());
  CHECK(c.launch_gap_samples == 38400);
  CHECK(std::fabs(c.launch_gap->p50 / (std::log(2.0) * spec.gap_mean_s) - 1) < 0.03);
  // The collective: transfer apart from the waits, constant: no jitter.
  REQUIRE(c.collectives.size() == 1);
  CHECK(std::fabs(c.collectives[0].transfer_p50_s / spec.transfer_s - 1) < 1e-6);
  CHECK(c.collectives[0].wait_mean_s > 0.1);  // members wait for the slowest replica
  CHECK_FALSE(c.collectives[0].jitter.has_value());
}

TEST_CASE("timeline calibration fits no jitter where the data has none, and the jitter it has") {
  SyntheticSpec spec;
  spec.steps = 40;
  spec.replicas = 4;
  TimelineOptions options;
  options.bootstrap_replicates = 0;
  {
    const TimelineCalibration c = calibrate_timelines({synthetic(spec)}, options);
    REQUIRE(c.collectives.size() == 1);
    CHECK_FALSE(c.collectives[0].jitter.has_value());
    CHECK(c.collectives[0].spread < 1e-9);
  }
  // Lognormal jitter of sigma 0.1 on 80 calls (40 steps x 2 stages): robust spread within 30%.
  spec.jitter_sigma = 0.1;
  const TimelineCalibration c = calibrate_timelines({synthetic(spec)}, options);
  REQUIRE(c.collectives.size() == 1);
  REQUIRE(c.collectives[0].jitter.has_value());
  CHECK(c.collectives[0].op == "all_gather");
  CHECK(std::fabs(c.collectives[0].spread / 0.1 - 1) < 0.3);
  CHECK(c.collectives[0].jitter->p95 > 1.1);
}

TEST_CASE("pipeline op types: direction and side read as op kinds are (any case, '-' or '_')") {
  const auto forward_send = timeline_p2p_side("Forward_Send");
  REQUIRE(forward_send.has_value());
  CHECK(forward_send->forward);
  CHECK(forward_send->send);
  const auto backward_recv = timeline_p2p_side("bwd-RECV");
  REQUIRE(backward_recv.has_value());
  CHECK_FALSE(backward_recv->forward);
  CHECK_FALSE(backward_recv->send);
  CHECK(timeline_op_kind("Forward_Send") == TimelineOpKind::p2p);
  // Megatron's combined op names both directions and both sides: no single pair.
  CHECK_FALSE(timeline_p2p_side("send_forward_recv_backward").has_value());
  CHECK_FALSE(timeline_p2p_side("recv").has_value());
}

/// Appends a pipeline send on (stage, replica) and its receive on the neighbouring stage.
void add_p2p(Timeline& t, bool forward, int32_t from_stage, int32_t replica, int64_t step,
             double send_start, double recv_start, double transfer_s) {
  const int32_t to_stage = from_stage + (forward ? 1 : -1);
  const double end = std::max(send_start, recv_start) + transfer_s;
  for (const bool send : {true, false}) {
    TimelineOp op;
    op.stage = send ? from_stage : to_stage;
    op.replica = replica;
    op.rank = replica * 2 + op.stage;
    op.step = step;
    op.optype = (forward ? 0 : 2) + (send ? 0 : 1);
    op.kind = TimelineOpKind::p2p;
    op.start_s = send ? send_start : recv_start;
    op.duration_s = end - op.start_s;  // each side waits for the other, then the transfer
    t.ops.push_back(op);
  }
}

TEST_CASE(
    "pipeline transfers: a send matched with its receive, the wait for the later side "
    "left out") {
  Timeline t;
  t.path = "p2p";
  t.optypes = {"forward-send", "forward-recv", "backward-send", "backward-recv"};
  // 3 steps x 2 replicas x 4 microbatches a direction; transfers 8 ms forward and 5 ms backward,
  // with the receive posted early (forward, by up to 0.4 s) or late (backward, up to 0.3 s).
  for (int64_t step = 0; step < 3; ++step) {
    for (int32_t replica = 0; replica < 2; ++replica) {
      for (int mb = 0; mb < 4; ++mb) {
        const double at = 1.0 * mb;
        add_p2p(t, true, 0, replica, step, at, at - 0.1 * (mb + replica), 0.008);
        add_p2p(t, false, 1, replica, step, at + 0.5, at + 0.5 + 0.1 * mb, 0.005);
      }
    }
  }
  TimelineOptions options;
  options.bootstrap_replicates = 0;
  const TimelineCalibration c = calibrate_timelines({t}, options);
  REQUIRE(c.pipeline.size() == 2);
  CHECK(c.pipeline[0].direction == "forward");
  CHECK(c.pipeline[0].pairs == 24);
  CHECK(c.pipeline[0].transfer_p50_s == doctest::Approx(0.008).epsilon(1e-9));
  CHECK(c.pipeline[0].transfer_p95_s == doctest::Approx(0.008).epsilon(1e-9));
  CHECK(c.pipeline[1].direction == "backward");
  CHECK(c.pipeline[1].pairs == 24);
  CHECK(c.pipeline[1].transfer_p50_s == doctest::Approx(0.005).epsilon(1e-9));
  CHECK(timeline_json(c).find("\"pipeline\": [") != std::string::npos);
  CHECK(timeline_report(c).find("pipeline p2p") != std::string::npos);

  // A send whose receive is not in the timeline is left out, and said.
  Timeline partial = t;
  partial.ops.pop_back();  // the last backward receive
  const TimelineCalibration one_short = calibrate_timelines({partial}, options);
  CHECK(one_short.pipeline[1].pairs == 23);
  bool noted = false;
  for (const std::string& n : one_short.notes)
    noted = noted || n.find("pipeline backward: 1 sends or receives without their other side") == 0;
  CHECK(noted);

  // Without dp_rank the sides cannot be paired: said, not guessed.
  for (TimelineOp& op : t.ops) op.replica = -1;
  const TimelineCalibration unplaced = calibrate_timelines({t}, options);
  REQUIRE(unplaced.pipeline.size() == 2);
  CHECK(unplaced.pipeline[0].pairs == 0);
  CHECK(unplaced.pipeline[0].reason.find("without stage or dp_rank") != std::string::npos);
}

TEST_CASE("levels that one GPU or one step cannot show are reported, not fitted") {
  SyntheticSpec one_step;
  one_step.steps = 1;
  TimelineOptions options;
  const TimelineCalibration c = calibrate_timelines({synthetic(one_step)}, options);
  CHECK_FALSE(level(c, "step").estimable);
  CHECK_FALSE(level(c, "gpu_step").estimable);
  CHECK(level(c, "gpu").estimable);
  bool noted = false;
  for (const std::string& n : c.notes)
    noted = noted || n.find("step (levels.step): not estimable") == 0;
  CHECK(noted);

  SyntheticSpec one_gpu;
  one_gpu.replicas = 1;
  one_gpu.stages = 1;
  const TimelineCalibration g = calibrate_timelines({synthetic(one_gpu)}, options);
  CHECK_FALSE(level(g, "gpu").estimable);
  CHECK_FALSE(level(g, "gpu_step").estimable);
  CHECK_FALSE(level(g, "microbatch").estimable);  // one stage: no microbatch on two GPUs
  CHECK(level(g, "step").estimable);
  CHECK(level(g, "forward_pass").estimable);
}

TEST_CASE("a timeline without variation yields no levels and no jitter") {
  SyntheticSpec flat;
  flat.truth = Truth{0, 0, 0, 0, 0, 0};
  flat.steps = 5;
  flat.replicas = 4;
  TimelineOptions options;
  options.bootstrap_replicates = 10;
  const TimelineCalibration c = calibrate_timelines({synthetic(flat)}, options);
  for (const LevelEstimate& e : c.levels) {
    INFO(e.level);
    CHECK(e.estimable);
    CHECK(e.sigma < 1e-6);
    CHECK_FALSE(e.fit.has_value());
  }
  CHECK_FALSE(c.collectives[0].jitter.has_value());
}

TEST_CASE("timeline CSV: layout detected by its header, bad input located") {
  const std::string good =
      temp_file("good.csv",
                "dp_rank,stage,rank,step,optype,start_ts,duration,seq_id,mc,mb_id,gmc\n"
                "0,0,0,1,forward-compute,0.0,0.5,0,0,0,0\n"
                "0,0,0,1,grads-reduce-scatter,0.5,0.1,0,-1,-1,-1\n"
                "0,0,0,2,backward-compute,0.0,0.7,0,0,0,0\n");
  CHECK(is_timeline_csv(good));
  const Timeline t = read_timeline_csv(good);
  REQUIRE(t.ops.size() == 3);
  CHECK(t.ops[0].kind == TimelineOpKind::forward);
  CHECK(t.ops[1].kind == TimelineOpKind::collective);
  CHECK(t.ops[1].microbatch == -1);
  CHECK(t.ops[2].step == 2);
  CHECK(t.ops[2].duration_s == 0.7);
  CHECK_FALSE(is_timeline_csv(temp_file("samples.csv", "name,duration_us\ngemm,1\n")));

  CHECK(input_error(temp_file("missing.csv", "rank,step,optype,start_ts\n0,1,forward,0\n")) ==
        fmt::format("{}:1:1: error: missing column duration: a timeline needs rank, step, "
                    "optype, start_ts, duration",
                    temp_file("missing.csv", "rank,step,optype,start_ts\n0,1,forward,0\n")));
  const std::string negative =
      temp_file("negative.csv", "rank,step,optype,start_ts,duration\n0,1,forward,0,-0.5\n");
  CHECK(input_error(negative) ==
        negative + ":2:15: error: negative duration -0.5 s: durations are seconds >= 0");
  const std::string order = temp_file("order.csv",
                                      "rank,step,optype,start_ts,duration\n"
                                      "0,2,forward,0,1\n1,1,forward,0,1\n0,1,forward,0,1\n");
  CHECK(input_error(order) ==
        order +
            ":4:3: error: op of rank 0 in step 1 after its step 2 (line 2): ops out of step "
            "order (list each rank's steps in increasing order)");
  const std::string unknown = temp_file("unknown.csv", "rank,step,optyp,start_ts,duration\n");
  CHECK(input_error(unknown).find(unknown + ":1:11: error: unknown timeline column 'optyp' (did "
                                            "you mean 'optype'?)") != std::string::npos);
  const std::string text =
      temp_file("text.csv", "rank,step,optype,start_ts,duration\n0,one,forward,0,1\n");
  CHECK(input_error(text) == text + ":2:3: error: step must be an integer, got 'one'");
}

TEST_CASE("Kineto traces: kernels take the step of their ProfilerStep# window") {
  // Host-side windows: the kernel's launch (the runtime call of its correlation id) decides,
  // not its start on the GPU (the second kernel starts after step 7's window ended).
  const std::string host =
      temp_file("steps.json", R"({"distributedInfo": {"rank": 0}, "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "ts": 0, "dur": 100},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#8", "ts": 100, "dur": 100},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 10, "dur": 1, "args": {"correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 90, "dur": 1, "args": {"correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 150, "dur": 1, "args": {"correlation": 3}},
    {"ph": "X", "cat": "kernel", "name": "gemm_a", "ts": 20, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "gemm_a", "ts": 120, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "gemm_a", "ts": 160, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 3}}
  ]})");
  SampleSet set(SignatureOptions{});
  read_kineto_trace(host, set);
  REQUIRE(set.samples().size() == 3);
  CHECK(set.samples()[0].step == 7);
  CHECK(set.samples()[1].step == 7);
  CHECK(set.samples()[2].step == 8);
  CHECK(set.inputs().back().steps == 2);
  // GPU-side windows, when present, decide by the kernel's start.
  const std::string gpu = temp_file("gpu-steps.json", R"({"traceEvents": [
    {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#3", "ts": 0, "dur": 100},
    {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#4", "ts": 100, "dur": 100},
    {"ph": "X", "cat": "kernel", "name": "gemm_a", "ts": 120, "dur": 5, "args": {"device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "gemm_a", "ts": 250, "dur": 5, "args": {"device": 0, "stream": 7}}
  ]})");
  SampleSet g(SignatureOptions{});
  read_kineto_trace(gpu, g);
  CHECK(g.samples()[0].step == 4);
  CHECK(g.samples()[1].step == -1);  // outside every window
}

TEST_CASE("kernel samples with steps show the step level") {
  // 20 steps x 8 GPUs x 3 kernels x 10 calls; step sigma 0.05, GPU x step 0.03, kernel 0.02.
  std::string csv = "name,duration_us,gpu,step\n";
  std::mt19937_64 rng(3);
  std::normal_distribution<double> z(0, 1);
  for (int step = 0; step < 20; ++step) {
    const double s = 0.05 * z(rng);
    for (int gpu = 0; gpu < 8; ++gpu) {
      const double gs = 0.03 * z(rng);
      for (int k = 0; k < 3; ++k) {
        for (int call = 0; call < 10; ++call) {
          csv += fmt::format("kernel_{},{},{},{}\n", k,
                             100.0 * (k + 1) * std::exp(s + gs + 0.02 * z(rng)), gpu, step);
        }
      }
    }
  }
  SampleSet set(SignatureOptions{});
  read_samples_csv(temp_file("stepped.csv", csv), set);
  const KernelStepLevels l = kernel_step_levels(set);
  CHECK(l.steps == 20);
  CHECK(l.gpus == 8);
  REQUIRE(l.step_estimable);
  // 20 steps: a standard error of about 16% on the step sigma; GPU x step from 152 cells, 6%.
  CHECK(std::fabs(l.step_sigma / 0.05 - 1) < 0.4);
  CHECK(std::fabs(l.gpu_step_sigma / 0.03 - 1) < 0.2);
  CHECK(std::fabs(l.residual_sigma / 0.02 - 1) < 0.1);
}
