#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "collectives/cost_model.hpp"
#include "config/scenario_loader.hpp"
#include "in_child.hpp"
#include "near.hpp"
#include "runtime/simulation.hpp"
#include "workload/compute_model.hpp"
#include "workload/pipeline_schedule.hpp"
#include "workload/step_estimate.hpp"
#include "workload/transformer_job.hpp"
#include "workload/transformer_model.hpp"

using prismsim::testing::Near;

using namespace prismsim;

namespace {

/// Relative to the values compared (see near.hpp).
Near rel(double expected, double epsilon = 1e-9) { return {expected, epsilon}; }

const std::string kTinyGpt = PRISMSIM_SOURCE_DIR "/workloads/scenarios/tiny-gpt-h100.yaml";

/// tiny-gpt (4 layers, hidden 256, sequence 512, 16 sequences a step) on H100s, one step; the
/// host issues kernels at once (the closed forms below add up device times).
Scenario tiny(std::vector<std::string> overrides) {
  overrides.push_back("simulation.steps=1");
  overrides.push_back("host.kernel_launch=0s");
  overrides.push_back("host.collective_launch=0s");
  return load_scenario(kTinyGpt, overrides);
}

/// Step times of `s` simulated in a child process.
std::vector<double> simulate(const Scenario& s) {
  return testing::in_child([&] {
    const Job job = build_transformer_job(s, Topology(s.platform));
    Simulation simulation(s, job);
    std::vector<double> times;
    simulation.run({}, [&](int, double t) { times.push_back(t); });
    return times;
  });
}

double simulate_step(const Scenario& s) {
  const auto times = simulate(s);
  REQUIRE(times.size() == 1);
  return times[0];
}

/// Nominal seconds of the kernels of `items` on the scenario's GPU (collectives excluded).
double kernels_seconds(const Scenario& s, const std::vector<PassItem>& items) {
  double seconds = 0;
  for (const PassItem& item : items) {
    if (item.kind != PassItem::Kind::kernel) continue;
    seconds += kernel_seconds(item.work, s.platform.gpu, s.workload.precision);
  }
  return seconds;
}

/// Forward and backward seconds of virtual stage `vs` of `stages` holding `layers` layers.
std::pair<double, double> stage_seconds(const Scenario& s, int vs, int stages, int layers) {
  const LayerContext c = layer_context(s);
  double forward = layers * kernels_seconds(s, layer_forward(c));
  double backward = layers * kernels_seconds(s, layer_backward(c));
  if (vs == 0) {
    forward += kernels_seconds(s, embedding_forward(c));
    backward += kernels_seconds(s, embedding_backward(c));
  }
  if (vs == stages - 1) {
    forward += kernels_seconds(s, head_forward(c));
    backward += kernels_seconds(s, head_backward(c));
  }
  return {forward, backward};
}

/// tiny-gpt's activation (b s h, bf16) from GPU 0 to GPU 1 over NVLink: the route's latency,
/// then the bytes at its narrowest link.
double activation_transfer_s(const Topology& topology) {
  std::vector<int> route;
  topology.route(0, 1, route);
  REQUIRE(!route.empty());
  double bandwidth = 1e300;
  for (int link : route)
    bandwidth = std::min(bandwidth, topology.links()[static_cast<size_t>(link)].bandwidth_Bps);
  return topology.route_latency(0, 1) + 512.0 * 256 * 2 / bandwidth;
}

double optimizer_seconds(const Scenario& s, double parameters) {
  const int gradient_bytes = bytes_per_element(s.parallelism.gradient_reduce_precision);
  return kernel_seconds(
             optimizer_step(parameters, gradient_bytes, bytes_per_element(s.workload.precision)),
             s.platform.gpu, s.workload.precision) +
         kernel_seconds(zero_gradients(parameters, gradient_bytes), s.platform.gpu,
                        s.workload.precision);
}

}  // namespace

TEST_CASE("one transformer GPU runs its microbatches' passes and the optimizer back to back") {
  const Scenario s =
      tiny({"parallelism.gpus=1", "parallelism.tp=1", "parallelism.pp=1", "parallelism.dp=1"});
  const LayerContext c = layer_context(s);
  // 16 microbatches of forward and backward through embedding, 4 layers and head, then Adam over
  // every parameter (embedding and untied head).
  const auto [forward, backward] = stage_seconds(s, 0, 1, 4);
  const double parameters = 4 * layer_parameters(c.model) + 2 * embedding_parameters(c);
  const double expected = 16 * (forward + backward) + optimizer_seconds(s, parameters);
  // The same as the job's segments in program order.
  const Job job = build_transformer_job(s, Topology(s.platform));
  double segments = 0;
  for (const Op& op : job.program_of_rank[0]->streams[0]) {
    REQUIRE(std::holds_alternative<ops::RunSegment>(op));
    segments += nominal_seconds(job, op);
  }
  CHECK(segments == rel(expected, 1e-12));
  CHECK(simulate_step(s) == rel(expected, 1e-9));
  // Tied, the head multiplies by the embedding's table: Adam updates one table, not two.
  Scenario tied = s;
  tied.workload.model.tied_embeddings = true;
  const double tied_parameters = 4 * layer_parameters(c.model) + embedding_parameters(c);
  CHECK(simulate_step(tied) ==
        rel(16 * (forward + backward) + optimizer_seconds(tied, tied_parameters), 1e-9));
}

TEST_CASE("recomputing the first N layers costs N layers' recompute, simulated and closed form") {
  Scenario s =
      tiny({"parallelism.gpus=1", "parallelism.tp=1", "parallelism.pp=1", "parallelism.dp=1"});
  auto closed_form = [](const Scenario& x) {
    return StepEstimate(x, Topology(x.platform)).seconds(x.platform.gpu, x.host);
  };
  const double none = simulate_step(s);
  s.parallelism.recompute = Recompute::full;
  const double full = simulate_step(s);
  // tiny-gpt's 4 layers on one stage: the first recomputes, the other three keep activations.
  s.parallelism.recompute_layers = 1;
  const double one = simulate_step(s);
  CHECK(full > none);
  CHECK(one - none == rel((full - none) / 4, 1e-9));
  CHECK(closed_form(s) == rel(one, 1e-9));
  s.parallelism.recompute_layers = 4;
  CHECK(simulate_step(s) == rel(full, 1e-12));
}

namespace {

/// A 1F1B or GPipe pipeline of 4 stages of one layer each, 16 microbatches, on one node.
void check_pipeline(const Scenario& s, double epsilon) {
  const int p = 4, m = 16;
  REQUIRE(s.parallelism.pp == p);
  REQUIRE(microbatches_per_replica(s) == m);
  std::vector<double> forward, backward;
  for (int vs = 0; vs < p; ++vs) {
    const auto [f, b] = stage_seconds(s, vs, p, 1);
    forward.push_back(f);
    backward.push_back(b);
  }
  const Topology topology(s.platform);
  const double transfer = activation_transfer_s(topology);
  const LayerContext c = layer_context(s);
  // Stage 0 finishes last (its backward ends the pipeline); it then updates its layer and the
  // embedding, as the last stage does its layer and the head.
  // Then every stage reduces the gradient norm with the others (8 bytes) before its optimizer.
  const double norm = predicted_call_seconds({0, 1, 2, 3}, topology, s.platform,
                                             CollectiveOp::all_reduce, 8, Algorithm::automatic);
  const double expected =
      pipeline_makespan(s.parallelism.schedule, p, 1, m, forward, backward, transfer) + norm +
      optimizer_seconds(s, layer_parameters(c.model) + embedding_parameters(c));
  CAPTURE(transfer);
  const double simulated = simulate_step(s);
  CAPTURE(simulated - expected);
  CHECK(simulated == rel(expected, epsilon));
}

}  // namespace

TEST_CASE("1F1B and GPipe pipelines with free transfers match the closed-form schedule") {
  for (const char* schedule : {"1f1b", "gpipe"}) {
    CAPTURE(schedule);
    check_pipeline(
        tiny({"parallelism.gpus=4", "parallelism.tp=1", "parallelism.pp=4", "parallelism.dp=1",
              std::string("parallelism.schedule=") + schedule, "parallelism.pipeline_sends=async",
              "platform.node.nvlink.bandwidth=1Pbps", "platform.node.nvlink.latency=0s"}),
        // At the largest bandwidth prismsim accepts a transfer takes 2 ns, about SimGrid's time
        // precision (1 ns): the simulated step differs by 7.6e-7 of it (measured).
        1e-6);
  }
}

// A transfer starts when the sender has finished its pass and the receiver has reached its
// receive (rendezvous, in SimGrid's mailboxes as in NCCL), in the runtime and in
// pipeline_makespan alike; with asynchronous sends the sender computes on meanwhile.
TEST_CASE("a 1F1B pipeline on NVLink matches the closed-form schedule") {
  check_pipeline(tiny({"parallelism.gpus=4", "parallelism.tp=1", "parallelism.pp=4",
                       "parallelism.dp=1", "parallelism.pipeline_sends=async"}),
                 1e-6);
}

TEST_CASE("a 1F1B pipeline on slow links matches the closed-form schedule with transfers") {
  // 263 us per activation transfer, comparable to a pass. The simulated step is 15 ns (1.1e-6 of
  // it) short of the closed form (measured): SimGrid's 1 ns time precision over the step's events.
  check_pipeline(
      tiny({"parallelism.gpus=4", "parallelism.tp=1", "parallelism.pp=4", "parallelism.dp=1",
            "platform.node.nvlink.bandwidth=1GBps", "parallelism.pipeline_sends=async"}),
      2e-6);
}

namespace {

/// tiny-gpt on 2 GPUs, 2 stages of 2 chunks each, receives ahead or on use, transfers of 300 us
/// latency and unlimited bandwidth; then `more`.
Scenario slow_interleaved(bool ahead, std::vector<std::string> more) {
  std::vector<std::string> overrides = {
      "parallelism.gpus=2",
      "parallelism.tp=1",
      "parallelism.pp=2",
      "parallelism.dp=1",
      "parallelism.schedule=interleaved",
      "parallelism.virtual_stages=2",
      "platform.node.nvlink.bandwidth=1Pbps",
      "platform.node.nvlink.latency=300us",
      std::string("parallelism.pipeline_receives=") + (ahead ? "ahead" : "on_use")};
  overrides.insert(overrides.end(), more.begin(), more.end());
  return tiny(overrides);
}

/// What follows the pipeline of slow_interleaved's step: rank 0 ends it (virtual stage 0's last
/// backward); then the gradient norm and its optimizer over two layers and the embedding.
double slow_interleaved_step_end(const Scenario& s) {
  const Topology topology(s.platform);
  const LayerContext c = layer_context(s);
  return predicted_call_seconds({0, 1}, topology, s.platform, CollectiveOp::all_reduce, 8,
                                Algorithm::automatic) +
         optimizer_seconds(s, 2 * layer_parameters(c.model) + embedding_parameters(c));
}

}  // namespace

// Megatron's interleaved schedule with overlap_p2p_comm posts each pass's receive after the
// rank's previous pass of the same direction: a transfer runs while the receiver computes. The
// links' latency makes the transfers as long as passes (300 us); their bandwidth is unlimited, as
// the closed form has no sharing of a link by transfers that overlap.
TEST_CASE(
    "interleaved pipelines with slow transfers match the closed form, receives ahead or not") {
  const int p = 2, v = 2, m = 16;
  for (const bool ahead : {false, true}) {
    CAPTURE(ahead);
    const Scenario s = slow_interleaved(ahead, {});
    REQUIRE(s.parallelism.pipeline_receives_ahead == ahead);
    REQUIRE(microbatches_per_replica(s) == m);
    std::vector<double> forward, backward;
    for (int vs = 0; vs < p * v; ++vs) {
      const auto [f, b] = stage_seconds(s, vs, p * v, 1);
      forward.push_back(f);
      backward.push_back(b);
    }
    const double transfer = activation_transfer_s(Topology(s.platform));
    const double makespan = pipeline_makespan(PipelineSchedule::interleaved, p, v, m, forward,
                                              backward, transfer, ahead);
    const double expected = makespan + slow_interleaved_step_end(s);
    CAPTURE(transfer);
    CAPTURE(makespan);
    const double simulated = simulate_step(s);
    CHECK(simulated == rel(expected, 2e-6));
    // Ahead, the transfers hide behind the other direction's passes.
    if (ahead) {
      CHECK(makespan < pipeline_makespan(PipelineSchedule::interleaved, p, v, m, forward, backward,
                                         transfer, false) -
                           4 * transfer);
    }
  }
}

// Megatron's host does not wait on a posted receive (overlap_p2p_comm): while the GPU waits for
// the data, the host issues the next pass's kernels, and the GPU then finds them launched. With
// 100 us of module code a unit (free launches) every pass starts with waits for the host. On
// use, the step is the closed form with those waits in the passes' times (within SimGrid's 1 ns
// over the step's events); ahead, it is below that (the waits behind a receive are gone) and
// above the closed form without them (the host is never free).
TEST_CASE("a host ahead across posted receives has launched the next pass when its data arrives") {
  const int p = 2, v = 2, m = 16;
  for (const bool ahead : {false, true}) {
    CAPTURE(ahead);
    const Scenario s = slow_interleaved(ahead, {"host.layer_launch=100us", "host.layer_syncs=0"});
    const Job job = build_transformer_job(s, Topology(s.platform));
    // Each virtual stage's passes with the host's waits: their segments (one a pass here).
    std::vector<double> forward(p * v, -1), backward(p * v, -1);
    std::vector<double> forward_waits(p * v, 0), backward_waits(p * v, 0);
    for (const Segment& segment : job.segments) {
      int first = 0, last = 0;
      if (std::sscanf(segment.name.c_str(), "%*s layers %d-%d", &first, &last) != 2) continue;
      REQUIRE(first == last);  // one layer a virtual stage
      const bool is_forward = segment.name.rfind("forward", 0) == 0;
      auto& seconds = is_forward ? forward : backward;
      auto& waits = is_forward ? forward_waits : backward_waits;
      CHECK((seconds[first] < 0 || seconds[first] == segment.seconds));
      CHECK((waits[first] == 0 || waits[first] == segment.host_wait_s));
      seconds[first] = segment.seconds;
      waits[first] = segment.host_wait_s;
      CHECK(!segment.host_waits);
      CHECK(segment.host_wait_s > 0.99e-4);
    }
    const double transfer = activation_transfer_s(Topology(s.platform));
    const double step_end = slow_interleaved_step_end(s);
    const double with_waits_s = pipeline_makespan(PipelineSchedule::interleaved, p, v, m, forward,
                                                  backward, transfer, ahead) +
                                step_end;
    std::vector<double> forward_free = forward, backward_free = backward;
    for (int vs = 0; vs < p * v; ++vs) {
      forward_free[vs] -= forward_waits[vs];
      backward_free[vs] -= backward_waits[vs];
    }
    const double without_waits_s = pipeline_makespan(PipelineSchedule::interleaved, p, v, m,
                                                     forward_free, backward_free, transfer, ahead) +
                                   step_end;
    const double simulated = simulate_step(s);
    CAPTURE(with_waits_s);
    CAPTURE(without_waits_s);
    if (!ahead) {
      CHECK(simulated == rel(with_waits_s, 2e-6));
    } else {
      CHECK(simulated < with_waits_s - 1e-4);  // at least one pass's waits gone
      CHECK(simulated > without_waits_s);
    }
  }
}

namespace {

/// Seconds of the output layer's weight gradient in one backward pass.
double embedding_wgrad_seconds(const Scenario& s) {
  double seconds = 0;
  for (const PassItem& item : head_backward(layer_context(s))) {
    if (item.embedding_wgrad)
      seconds += kernel_seconds(item.work, s.platform.gpu, s.workload.precision);
  }
  return seconds;
}

// Megatron-Core's defer_embedding_wgrad_compute: the last stage's backward passes leave out the
// output layer's weight gradient and compute all of them after its last one. With two stages the
// step ends with the first stage's last backward (the pipeline's makespan) or with the drain, m
// weight gradients after the last stage's last backward, which is the first stage's last
// backward and one transfer earlier.
void check_deferred_drain(bool long_drain) {
  CAPTURE(long_drain);
  const int p = 2, m = 16;
  auto scenario = [&](bool defer) {
    std::vector<std::string> sets = {"parallelism.gpus=2", "parallelism.tp=1", "parallelism.pp=2",
                                     "parallelism.dp=1", "parallelism.pipeline_sends=async"};
    if (long_drain) sets.push_back("workload.model.vocab=400000");
    if (defer) sets.push_back("parallelism.defer_embedding_wgrad=true");
    return tiny(sets);
  };
  const Scenario deferred = scenario(true);
  REQUIRE(microbatches_per_replica(deferred) == m);
  const double w = embedding_wgrad_seconds(deferred);
  REQUIRE(w > 0);
  std::vector<double> forward, backward;
  for (int vs = 0; vs < p; ++vs) {
    const auto [f, b] = stage_seconds(deferred, vs, p, 2);
    forward.push_back(f);
    backward.push_back(b);
  }
  backward[1] -= w;
  const Topology topology(deferred.platform);
  const double transfer = activation_transfer_s(topology);
  const double makespan =
      pipeline_makespan(PipelineSchedule::one_f_one_b, p, 1, m, forward, backward, transfer);
  const double drained = makespan - transfer - backward[0] + m * w;
  const LayerContext c = layer_context(deferred);
  const double norm = predicted_call_seconds({0, 1}, topology, deferred.platform,
                                             CollectiveOp::all_reduce, 8, Algorithm::automatic);
  const double expected =
      std::max(makespan, drained) + norm +
      optimizer_seconds(deferred, 2 * layer_parameters(c.model) + embedding_parameters(c));
  CAPTURE(makespan);
  CAPTURE(drained);
  CHECK((drained > makespan) == long_drain);
  const double simulated = simulate_step(deferred);
  CHECK(simulated == rel(expected, 1e-6));
  CHECK(simulated < simulate_step(scenario(false)));
}

}  // namespace

TEST_CASE("deferred output-layer weight gradients shorten the last stage's passes, then drain") {
  // tiny-gpt's vocabulary: the drain fits in the last stage's idle time; 400,000: it ends the step.
  check_deferred_drain(false);
  check_deferred_drain(true);
}

TEST_CASE("a deferral limit leaves the later microbatches' weight gradients in their passes") {
  auto job_of = [](std::vector<std::string> sets) {
    sets.insert(sets.end(),
                {"parallelism.gpus=2", "parallelism.tp=1", "parallelism.pp=2", "parallelism.dp=1"});
    const Scenario s = tiny(sets);
    return build_transformer_job(s, Topology(s.platform));
  };
  // Kernels named like the output layer's weight gradient in the last stage's program, and its
  // nominal compute time.
  auto last_stage = [](const Job& job) {
    int wgrads = 0;
    double seconds = 0;
    for (const Op& op : job.program_of_rank[1]->streams[0]) {
      seconds += nominal_seconds(job, op);
      if (const auto* run = std::get_if<ops::RunSegment>(&op)) {
        for (const Kernel& k : job.segments[run->segment].kernels)
          wgrads += k.name == "output_head_wgrad";
      }
    }
    return std::make_pair(wgrads, seconds);
  };
  const Job plain = job_of({});
  const Job all = job_of({"parallelism.defer_embedding_wgrad=true"});
  const Job limited =
      job_of({"parallelism.defer_embedding_wgrad=true", "parallelism.wgrad_deferral_limit=3"});
  const auto [plain_wgrads, plain_seconds] = last_stage(plain);
  const auto [all_wgrads, all_seconds] = last_stage(all);
  const auto [limited_wgrads, limited_seconds] = last_stage(limited);
  // 16 weight gradients either way (a drain's are one segment's kernels): the work is moved,
  // not changed.
  CHECK(plain_wgrads == 16);
  CHECK(all_wgrads == 16);
  CHECK(limited_wgrads == 16);
  CHECK(all_seconds == rel(plain_seconds, 1e-12));
  CHECK(limited_seconds == rel(plain_seconds, 1e-12));
  // The drain: one segment of the deferred weight gradients, on the last stage only.
  auto drain = [](const Job& job, int rank) {
    for (const Op& op : job.program_of_rank[static_cast<size_t>(rank)]->streams[0]) {
      const auto* run = std::get_if<ops::RunSegment>(&op);
      if (run && job.segments[run->segment].name == "deferred output-layer wgrad") {
        return job.segments[run->segment].kernels.size();
      }
    }
    return size_t{0};
  };
  CHECK(drain(plain, 1) == 0);
  CHECK(drain(all, 1) == 16);
  CHECK(drain(limited, 1) == 3);
  CHECK(drain(all, 0) == 0);
}

namespace {

/// Step times of tiny-gpt on one node with TP 8, its collectives in the network and analytic.
/// Kernels take 1 ns of host time, so that the collectives are a large part of the step.
std::pair<double, double> tp_step_times(int microbatch, const char* algorithm) {
  auto with = [&](const char* mode) {
    return tiny({"parallelism.gpus=8", "parallelism.tp=8", "parallelism.pp=1", "parallelism.dp=1",
                 "workload.global_batch=16", "workload.microbatch=" + std::to_string(microbatch),
                 "platform.gpu.compute.kernel_overhead=1ns",
                 std::string("engine.collective_algorithm=") + algorithm,
                 std::string("engine.layer_collectives=") + mode});
  };
  const Scenario network = with("network");
  const double network_s = simulate_step(network);
  const double analytic_s = simulate_step(with("analytic"));
  // Both include the collectives: well more than the compute alone.
  const LayerContext c = layer_context(network);
  const auto [forward, backward] = stage_seconds(network, 0, 1, 4);
  const double compute =
      16 / microbatch * (forward + backward) +
      optimizer_seconds(network, (4 * layer_parameters(c.model) + 2 * embedding_parameters(c)) / 8);
  CAPTURE(compute);
  CHECK(network_s > 1.5 * compute);
  CHECK(analytic_s > 1.5 * compute);
  return {network_s, analytic_s};
}

}  // namespace

TEST_CASE("tensor-parallel ring all-reduces in the network cost what the analytic model charges") {
  // One microbatch of 16 sequences: 4 MiB all-reduces, for which automatic picks the ring.
  const auto [network_s, analytic_s] = tp_step_times(16, "auto");
  CHECK(network_s == rel(analytic_s, 0.02));
}

TEST_CASE("tensor-parallel tree all-reduces in the network cost what the analytic model charges") {
  // 16 microbatches of one sequence: 256 KiB all-reduces, for which automatic picks the double
  // binary tree. The cost model charges the tree's pipeline fill as chunks over the narrowest
  // link; step by step the two trees overlap a little more than it assumes (within 5% here;
  // before the fill was charged per chunk, the model was 56% too slow).
  const auto [network_s, analytic_s] = tp_step_times(1, "auto");
  CHECK(network_s == rel(analytic_s, 0.05));
}

TEST_CASE("the host issues kernels ahead across collectives in the network, as analytic does") {
  // tiny-gpt as bundled (TP 2 inside a node) is host-bound at the preset's 8 us a kernel. NCCL
  // calls do not block the host, so while a TP all-reduce runs it goes on issuing; in the
  // network it used to restart at each collective's end (the step came out 35% above the
  // analytic one, 4.56 ms against 3.39 ms).
  for (const char* layer_launch : {"0s", "1ms"}) {
    CAPTURE(layer_launch);
    auto step = [&](const char* mode) {
      return simulate_step(load_scenario(
          kTinyGpt, {"simulation.steps=1", std::string("host.layer_launch=") + layer_launch,
                     std::string("engine.layer_collectives=") + mode}));
    };
    CHECK(step("network") == rel(step("analytic"), 0.02));
  }
}

TEST_CASE(
    "a blocking copy makes the host wait for the device: free with a free host, one "
    "launch each when host-bound, simulated and closed form") {
  // tiny-gpt on one GPU with full recompute: 16 microbatches of 4 layers, each layer's forward
  // run twice (forward, recompute), 2 copies before each MLP: 256 copies a step.
  Scenario s = tiny({"parallelism.gpus=1", "parallelism.tp=1", "parallelism.pp=1",
                     "parallelism.dp=1", "parallelism.recompute=full"});
  auto with_syncs = [](Scenario x, int syncs) {
    x.host.layer_syncs = syncs;
    return x;
  };
  auto closed_form = [](const Scenario& x) {
    return StepEstimate(x, Topology(x.platform)).seconds(x.platform.gpu, x.host);
  };
  // A host that issues at once is never behind: waiting for the device costs nothing.
  const double free_host = simulate_step(s);
  CHECK(simulate_step(with_syncs(s, 2)) == rel(free_host, 1e-12));
  // A host far slower than every kernel (1 ms a launch): the device always waits for it, so
  // each copy adds its own call and nothing else.
  s.host.kernel_launch_s = 1e-3;
  const double host_bound = simulate_step(s);
  const double synced = simulate_step(with_syncs(s, 2));
  CHECK(synced - host_bound == rel(256 * 1e-3, 1e-9));
  // The closed form charges the copies alike (it differs from the simulation by tens of
  // microseconds a step already without them).
  CHECK(closed_form(with_syncs(s, 2)) - closed_form(s) == rel(synced - host_bound, 1e-9));
  // A host ahead of the device (8 us a launch; 8K-token sequences, whose attention outlasts the
  // launches) loses its lead at the copies: the MLP's kernels, which it had issued early, now
  // wait for its launches (here the MLP's GEMM takes about a launch, and torchtitan's eager
  // activation after it is several short kernels). 1.56 launches a copy when this was written.
  Scenario ahead =
      tiny({"parallelism.gpus=1", "parallelism.tp=1", "parallelism.pp=1", "parallelism.dp=1",
            "parallelism.recompute=full", "parallelism.framework=torchtitan",
            "parallelism.data_parallel=fsdp", "workload.model.sequence=8192"});
  ahead.host.kernel_launch_s = 8e-6;
  const double lead = simulate_step(ahead);
  const double waits = simulate_step(with_syncs(ahead, 2));
  CHECK(waits - lead > 1.25 * 256 * 8e-6);
  CHECK(closed_form(with_syncs(ahead, 2)) - closed_form(ahead) == rel(waits - lead, 1e-6));
}

namespace {

/// Seconds and count of one microbatch's adds into kept weight gradients on a single-stage job:
/// every layer's linear layers, the output layer's and the embedding table's.
std::pair<double, int> gradient_adds(const Scenario& s) {
  const LayerContext c = layer_context(s);
  double seconds = 0;
  int count = 0;
  auto add = [&](const std::vector<PassItem>& items, int times) {
    for (const PassItem& item : items) {
      if (!item.gradient_accumulation) continue;
      seconds += times * kernel_seconds(item.work, s.platform.gpu, s.workload.precision);
      count += times;
    }
  };
  add(layer_backward(c), c.model.layers);
  add(head_backward(c), 1);
  add(embedding_backward(c), 1);
  return {seconds, count};
}

}  // namespace

TEST_CASE(
    "weight gradients accumulate as the framework adds them: the fused GEMM never, Megatron's "
    "hook every microbatch, autograd from the second, simulated and closed form") {
  // tiny-gpt on one GPU, 16 microbatches a step, gradients in an fp32 main gradient (Megatron)
  // or reduced in fp32 (DeepSpeed, here), so that only the accumulation differs.
  auto one_gpu = [](std::vector<std::string> extra) {
    std::vector<std::string> o = {"parallelism.gpus=1",
                                  "parallelism.tp=1",
                                  "parallelism.pp=1",
                                  "parallelism.dp=1",
                                  "parallelism.gradient_reduce_precision=fp32",
                                  "workload.attention_backend=cudnn",
                                  "host.layer_syncs=0"};
    o.insert(o.end(), extra.begin(), extra.end());
    return tiny(o);
  };
  auto closed_form = [](const Scenario& x) {
    return StepEstimate(x, Topology(x.platform)).seconds(x.platform.gpu, x.host);
  };
  const Scenario fused = one_gpu({});
  const Scenario hook = one_gpu({"parallelism.gradient_accumulation=main_grad"});
  const Scenario autograd = one_gpu({"parallelism.framework=megatron-deepspeed"});
  REQUIRE(autograd.parallelism.gradient_accumulation == GradientAccumulation::autograd);
  CHECK(gradient_adds(fused).second == 0);
  // qkv, attention output, MLP up and down in each of the 4 layers; the output layer (untied);
  // the embedding table.
  const auto [hook_s, hook_adds] = gradient_adds(hook);
  CHECK(hook_adds == 4 * 4 + 2);
  const auto [autograd_s, autograd_adds] = gradient_adds(autograd);
  CHECK(autograd_adds == hook_adds);
  // Bytes an element: the hook reads the bf16 gradient and reads and writes the fp32 main one;
  // autograd reads both bf16 gradients and writes one.
  const LayerContext c = layer_context(hook);
  const double qkv = 256.0 * 3 * 256;
  auto qkv_add_bytes = [](const Scenario& x) {
    for (const PassItem& item : layer_backward(layer_context(x))) {
      if (item.work.name == "qkv_projection_grad_accumulate") return item.work.bytes;
    }
    return 0.0;
  };
  CHECK(c.model.hidden == 256);
  CHECK(qkv_add_bytes(hook) == rel((2 + 4 + 4) * qkv, 1e-12));
  CHECK(qkv_add_bytes(autograd) == rel(3 * 2 * qkv, 1e-12));

  // Every microbatch adds with the hook.
  const double fused_step = simulate_step(fused);
  CHECK(simulate_step(hook) - fused_step == rel(16 * hook_s, 1e-9));
  CHECK(closed_form(hook) - closed_form(fused) == rel(16 * hook_s, 1e-9));
  // Autograd adds from the second microbatch on, and the optimizer sets `.grad` to None where
  // Megatron zeroes its buffer for the next step.
  const double parameters = 4 * layer_parameters(c.model) + 2 * embedding_parameters(c);
  const double zeroing_s =
      kernel_seconds(zero_gradients(parameters, 4), fused.platform.gpu, fused.workload.precision);
  CHECK(simulate_step(autograd) - fused_step == rel(15 * autograd_s - zeroing_s, 1e-9));
  CHECK(closed_form(autograd) - closed_form(fused) == rel(15 * autograd_s - zeroing_s, 1e-9));

  SUBCASE("in a pipeline each stage's first backward adds into nothing") {
    // PP 4 of one layer a stage: the closed form, with microbatch 0's backward passes lighter,
    // matches the simulation as it does without the adds (check_pipeline's tolerance).
    const Scenario piped =
        one_gpu({"parallelism.framework=megatron-deepspeed", "parallelism.gpus=4",
                 "parallelism.pp=4", "parallelism.pipeline_sends=async"});
    CHECK(simulate_step(piped) == rel(closed_form(piped), 1e-6));
  }
  SUBCASE("gradients reduced every microbatch are not kept: nothing to add") {
    const Scenario zero2 =
        one_gpu({"parallelism.framework=megatron-deepspeed", "parallelism.gpus=2",
                 "parallelism.dp=2", "parallelism.data_parallel=zero2"});
    CHECK(gradient_adds(zero2).second == 0);
  }
}

TEST_CASE("analytic tensor-parallel collectives use the algorithm the engine forces") {
  // engine.collective_algorithm: ring; the network runs rings, the analytic charge must too.
  const auto [network_s, analytic_s] = tp_step_times(1, "ring");
  CHECK(network_s == rel(analytic_s, 0.02));
}

TEST_CASE("a column layer's input-gradient reduction costs what its wgrad GEMM does not hide") {
  // tiny-gpt on TP 2, 16 microbatches: per backward pass 4 layers x 2 column regions and the
  // output layer, each all-reduce after its wgrad GEMM (parallelism.overlap_dgrad_reduce).
  auto scenario = [](bool overlap, const char* mode) {
    return tiny({"parallelism.gpus=2", "parallelism.tp=2", "parallelism.pp=1", "parallelism.dp=1",
                 std::string("parallelism.overlap_dgrad_reduce=") + (overlap ? "true" : "false"),
                 std::string("engine.layer_collectives=") + mode});
  };
  const Scenario with_s = scenario(true, "analytic");
  const Scenario without_s = scenario(false, "analytic");
  const Job with = build_transformer_job(with_s, Topology(with_s.platform));
  const Job without = build_transformer_job(without_s, Topology(without_s.platform));
  REQUIRE(with.segments.size() == without.segments.size());
  int hidden = 0;
  double saved_s = 0;  // per microbatch
  for (size_t i = 0; i < with.segments.size(); ++i) {
    const auto& a = with.segments[SegmentId(i)].kernels;
    const auto& b = without.segments[SegmentId(i)].kernels;
    REQUIRE(a.size() == b.size());
    for (size_t k = 0; k < a.size(); ++k) {
      if (a[k].seconds == b[k].seconds) continue;
      REQUIRE(k > 0);
      CHECK(a[k].name == "tp_all_reduce");
      CHECK(a[k - 1].name.ends_with("_wgrad"));
      CHECK(a[k].seconds == rel(std::max(0.0, b[k].seconds - b[k - 1].seconds), 1e-12));
      ++hidden;
      saved_s += b[k].seconds - a[k].seconds;
    }
  }
  CHECK(hidden == 9);
  CHECK(saved_s > 0);
  // Nothing else changes: the step is shorter by what the GEMMs hide, simulated and in the
  // step's closed form.
  const double simulated_s = simulate_step(without_s) - simulate_step(with_s);
  CHECK(simulated_s == rel(16 * saved_s, 1e-6));
  const double closed_form_s =
      StepEstimate(without_s, Topology(without_s.platform))
          .seconds(without_s.platform.gpu, without_s.host) -
      StepEstimate(with_s, Topology(with_s.platform)).seconds(with_s.platform.gpu, with_s.host);
  CHECK(closed_form_s == rel(16 * saved_s, 1e-6));

  SUBCASE("with the layers' collectives in the network the hidden ones stay in the segment") {
    auto network_calls = [](const Scenario& s) {
      const Job job = build_transformer_job(s, Topology(s.platform));
      int calls = 0;
      for (const Op& op : job.program_of_rank[0]->streams[0]) {
        calls += std::holds_alternative<ops::Collective>(op);
      }
      return calls;
    };
    const Scenario network_with = scenario(true, "network");
    CHECK(network_calls(scenario(false, "network")) - network_calls(network_with) == 16 * 9);
    CHECK(simulate_step(network_with) == rel(simulate_step(with_s), 0.02));
  }
}

TEST_CASE("overlapping the gradient all-reduce with the backward never lengthens a step") {
  // tiny-gpt at hidden 1024 (52M parameters): a bucket's all-reduce is short against a layer's
  // backward. (At hidden 256 a 1 MB bucket costs about the NCCL call latency, 56 us on
  // h100-ndr, and the last two buckets' calls queue after the backward: the tail of the
  // overlapped step is two calls against the sequential step's one, as on a real system.)
  const std::vector<std::string> base = {"parallelism.gpus=4", "parallelism.tp=1",
                                         "parallelism.pp=1", "parallelism.dp=4",
                                         "workload.model.hidden=1024"};
  auto step = [&](bool overlap, const char* bucket) {
    auto overrides = base;
    overrides.push_back(std::string("parallelism.overlap_gradient_reduce=") +
                        (overlap ? "true" : "false"));
    overrides.push_back(std::string("parallelism.gradient_bucket=") + bucket);
    return simulate_step(tiny(overrides));
  };
  // One bucket holding the whole model: it can only start at the end.
  const double one_sequential = step(false, "1GB");
  const double one_overlapped = step(true, "1GB");
  CHECK(one_overlapped <= one_sequential * (1 + 1e-9));
  CHECK(one_overlapped == rel(one_sequential, 1e-9));
  // 1 MB buckets: one per layer; all but the embedding's overlap the rest of the backward.
  const double many_sequential = step(false, "1MB");
  const double many_overlapped = step(true, "1MB");
  CAPTURE(many_sequential);
  CAPTURE(many_overlapped);
  CHECK(many_overlapped < many_sequential);
  CHECK(many_overlapped < one_overlapped);
}

TEST_CASE("every schedule and data-parallel kind runs a step to the end") {
  // Deadlocks (a wait without its record, a recv without its send, collectives in different
  // orders on members of a group) would end the simulation early with no step.
  const std::vector<std::vector<std::string>> variants = {
      {"parallelism.schedule=interleaved", "parallelism.virtual_stages=2"},
      // Blocking interleaved sends deadlocked these presets with 8 microbatches (sends are async
      // there now).
      {"parallelism.framework=megatron-deepspeed", "parallelism.schedule=interleaved",
       "parallelism.virtual_stages=2", "parallelism.gpus=4", "parallelism.dp=1"},
      {"parallelism.framework=torchtitan", "parallelism.schedule=interleaved",
       "parallelism.virtual_stages=2", "parallelism.gpus=4", "parallelism.dp=1"},
      {"parallelism.schedule=gpipe", "parallelism.data_parallel=zero1"},
      {"parallelism.data_parallel=fsdp"},
      {"parallelism.sequence_parallel=true", "parallelism.recompute=full",
       "parallelism.gradient_bucket=1MB"},
      {"parallelism.gpus=16", "parallelism.tp=2", "parallelism.pp=2", "parallelism.dp=2",
       "parallelism.cp=2"},
  };
  for (auto overrides : variants) {
    std::string label;
    for (const auto& o : overrides) label += o + " ";
    CAPTURE(label);
    overrides.push_back("workload.global_batch=8");
    const auto times = simulate(tiny(overrides));
    REQUIRE(times.size() == 1);
    CHECK(times[0] > 0);
  }
}

TEST_CASE("simulating one rank per tensor-parallel group gives every step time of the full run") {
  // Analytic TP on a non-blocking fabric: positions of a TP group never share a constraint.
  for (const char* dp : {"ddp", "zero1", "fsdp"}) {
    CAPTURE(dp);
    const std::vector<std::string> common = {"parallelism.gpus=16",
                                             "parallelism.tp=4",
                                             "parallelism.pp=2",
                                             "parallelism.dp=2",
                                             "engine.layer_collectives=analytic",
                                             std::string("parallelism.data_parallel=") + dp};
    auto with = [&](const char* symmetry) {
      auto overrides = common;
      overrides.push_back(std::string("engine.tensor_parallel_symmetry=") + symmetry);
      overrides.push_back("simulation.steps=2");
      return load_scenario(kTinyGpt, overrides);
    };
    const Scenario reduced = with("true"), full = with("false");
    const Job job = build_transformer_job(reduced, Topology(reduced.platform));
    REQUIRE(job.representative.size() == 16);
    CHECK(job.representative[5] == 4);  // rank 5 = tp 1 of the group starting at rank 4
    CHECK(job.program_of_rank[5] == nullptr);
    const auto reduced_s = simulate(reduced), full_s = simulate(full);
    REQUIRE(reduced_s.size() == 2);
    REQUIRE(full_s.size() == 2);
    CHECK(reduced_s[0] == full_s[0]);
    CHECK(reduced_s[1] == full_s[1]);
  }
}

/// tiny-gpt on 32 GPUs, nodes of 4 (TP 4, PP 2, DP 4), analytic TP collectives: with
/// `fabric`, step times with one rank per TP group and with every rank, and the ranks simulated.
struct SymmetryRun {
  std::vector<double> reduced, full;
  int simulated = 0;
};
SymmetryRun run_both(std::vector<std::string> fabric) {
  SymmetryRun out;
  for (const char* symmetry : {"true", "false"}) {
    auto overrides = fabric;
    for (const char* o :
         {"parallelism.gpus=32", "parallelism.tp=4", "parallelism.pp=2", "parallelism.dp=4",
          "platform.node.gpus=4", "engine.layer_collectives=analytic", "simulation.steps=2"}) {
      overrides.emplace_back(o);
    }
    overrides.push_back(std::string("engine.tensor_parallel_symmetry=") + symmetry);
    const Scenario s = load_scenario(kTinyGpt, overrides);
    const Job job = build_transformer_job(s, Topology(s.platform));
    const bool reduced = symmetry[0] == 't';
    if (reduced) {
      out.simulated =
          static_cast<int>(std::count_if(job.program_of_rank.begin(), job.program_of_rank.end(),
                                         [](const auto& program) { return program != nullptr; }));
    }
    (reduced ? out.reduced : out.full) = simulate(s);
  }
  return out;
}

TEST_CASE("on saturating shared links one rank per TP group, on the quotient, gives the full run") {
  // Each case: a fabric, and what makes a link above the GPUs limit the data-parallel and
  // pipeline flows (the full run is slower than without it). SimGrid shares a link of capacity
  // C among copies where the quotient gives one flow C / copies: the last bits may differ.
  struct Case {
    std::vector<std::string> fabric, limit;
  };
  const std::string two_dcs = "platform.datacenters=[{name: a, nodes: 4}, {name: b, nodes: 4}]";
  const std::vector<Case> cases = {
      {{"platform.fabric.radix=12", "platform.datacenters.0.nodes=8"},
       {"platform.fabric.oversubscription=[2]"}},  // 2:1 leaves of 2 nodes
      {{"platform.fabric.radix=8", "platform.fabric.levels=3", "platform.datacenters.0.nodes=8",
        "platform.fabric.oversubscription=[1, 1]"},
       {"platform.fabric.oversubscription=[1, 4]"}},  // 4:1 aggregation over leaves of one node
      {{"platform.fabric.radix=9", "platform.datacenters.0.nodes=8",
        "platform.fabric.type=rail_optimized"},
       {"platform.fabric.oversubscription=[4]", "platform.fabric.port_bandwidth=100Gbps"}},
      {{"platform.fabric.radix=12", two_dcs,
        "platform.wan=[{between: [a, b], bandwidth: 100Tbps, latency: 1ms}]"},
       {"platform.wan=[{between: [a, b], bandwidth: 100Gbps, latency: 1ms}]"}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.limit.front());
    const SymmetryRun open = run_both(c.fabric);
    auto limited = c.fabric;
    limited.insert(limited.end(), c.limit.begin(), c.limit.end());
    const SymmetryRun run = run_both(limited);
    CHECK(run.simulated == 8);
    REQUIRE(run.reduced.size() == 2);
    REQUIRE(run.full.size() == 2);
    REQUIRE(open.full.size() == 2);
    CHECK(run.full[0] > open.full[0] * 1.001);
    for (size_t step = 0; step < 2; ++step) CHECK(run.reduced[step] == rel(run.full[step], 1e-12));
  }
}

TEST_CASE("tensor-parallel symmetry is not used where positions are no image of each other") {
  // A node of 8 NICs on leaves of 6 ports: a node's positions sit on different leaves, so
  // moving a rank to the next position changes which switches its flows cross. Every rank is
  // simulated, shared links or not.
  for (const char* ratio : {"1", "1.5"}) {  // 6 and 7 down ports
    const Scenario s = tiny({"parallelism.gpus=16", "parallelism.tp=8", "parallelism.pp=1",
                             "parallelism.dp=2", "engine.layer_collectives=analytic",
                             "platform.fabric.radix=12", "platform.datacenters.0.nodes=2",
                             std::string("platform.fabric.oversubscription=[") + ratio + "]"});
    CHECK(build_transformer_job(s, Topology(s.platform)).representative.empty());
  }
  // Collective jitter draws per copy of a group: positions drift apart on shared links.
  std::vector<std::string> shared = {"parallelism.gpus=16",
                                     "parallelism.tp=4",
                                     "parallelism.pp=2",
                                     "parallelism.dp=2",
                                     "engine.layer_collectives=analytic",
                                     "platform.fabric.oversubscription=[2]",
                                     "platform.fabric.radix=12",
                                     "platform.datacenters.0.nodes=4"};
  const Scenario plain = tiny(shared);
  CHECK_FALSE(build_transformer_job(plain, Topology(plain.platform)).representative.empty());
  shared.emplace_back(
      "variability={network: {jitter: {inter_node: {lognormal: {median: 1, sigma: 0.1}}}}}");
  const Scenario jitter = tiny(shared);
  CHECK(build_transformer_job(jitter, Topology(jitter.platform)).representative.empty());
  // Nor with TP collectives in the network.
  const Scenario network = tiny({"parallelism.gpus=16", "parallelism.tp=4", "parallelism.pp=2",
                                 "parallelism.dp=2", "engine.layer_collectives=network"});
  CHECK(build_transformer_job(network, Topology(network.platform)).representative.empty());
}
