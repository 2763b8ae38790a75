#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "calibration_output.hpp"
#include "core/diagnostics.hpp"
#include "json_scanner.hpp"
#include "near.hpp"
#include "sample_readers.hpp"
#include "variability/distribution.hpp"
#include "variability_calibration.hpp"

using prismsim::testing::Near;

using namespace prismsim;

namespace {

/// A file in the test's temporary directory with `text` in it.
std::string temp_file(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / "prismsim-calibration-test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

/// The first diagnostic of what `read` throws.
template <typename Read>
std::string input_error(Read&& read) {
  try {
    read();
  } catch (const InputError& e) {
    return e.diagnostics().front().str();
  }
  return "no error";
}

}  // namespace

TEST_CASE("kernel names lose return type and parameters, and template arguments when asked") {
  const std::string fill =
      "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
      "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
      "at::detail::Array<char*, 1>)";
  CHECK(normalise_kernel_name(fill, true) == "at::native::vectorized_elementwise_kernel");
  CHECK(normalise_kernel_name(fill, false) ==
        "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "at::detail::Array<char*, 1> >");
  CHECK(normalise_kernel_name("void at::native::(anonymous namespace)::softmax_warp_forward<float, "
                              "float, 4>(float*, float const*, int)",
                              true) == "at::native::(anonymous namespace)::softmax_warp_forward");
  CHECK(
      normalise_kernel_name("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", false) ==
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64");
  CHECK(normalise_kernel_name("mlp_up", true) == "mlp_up");
  CHECK(kernel_class_by_name("sm90_xmma_gemm_bf16bf16_bf16f32") == "gemm");
  CHECK(kernel_class_by_name("flash_fwd_kernel") == "attention");
  CHECK(kernel_class_by_name("multi_tensor_apply_kernel") == "optimizer");
  CHECK(kernel_class_by_name("at::native::vectorized_elementwise_kernel") == "elementwise");
}

TEST_CASE("NCCL kernel names give the collective, profiler dtypes their size") {
  CHECK(collective_from_name("ncclDevKernel_AllReduce_Sum_bf16_RING_LL")->op == "all_reduce");
  CHECK(collective_from_name("ncclKernel_AllGather_RING_LL_Sum_int8_t")->op == "all_gather");
  CHECK(collective_from_name("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL")->op ==
        "reduce_scatter");
  CHECK(collective_from_name("ncclDevKernel_SendRecv")->kind == SampleKind::p2p);
  CHECK(collective_from_name("_allgather_base")->op == "all_gather");
  CHECK_FALSE(collective_from_name("gelu").has_value());
  CHECK(dtype_bytes("BFloat16") == 2);
  CHECK(dtype_bytes("Float") == 4);
  CHECK(dtype_bytes("mystery") == 0);
  CHECK(scope_of_ranks({0, 1, 7}, 8) == CommScope::intra_node);
  CHECK(scope_of_ranks({0, 8}, 8) == CommScope::inter_node);
}

TEST_CASE("the JSON scanner reports where the text is wrong") {
  const std::string text = "{\"a\": [1, 2,\n  3 4]}";
  JsonScanner json(text, "x.json");
  const std::string error = input_error([&] { json.skip_value(); });
  CHECK(error == "x.json:2:5: error: expected ',' or ']'");
  const std::string escaped = R"({"name": "a\"b\u00e9"})";
  JsonScanner strings(escaped, "y.json");
  std::string name;
  strings.object([&](const std::string&) { name = strings.string(); });
  CHECK(name == "a\"b\xc3\xa9");
}

TEST_CASE("a Kineto trace gives kernels by GPU and collective calls matched across ranks") {
  // Two ranks of one node; each runs one GEMM and an all-reduce on both; rank 1 arrives late at
  // the all-reduce, so rank 0 waits in it: the call's own time is rank 1's.
  const auto trace = [](int rank, double gemm_us, double all_reduce_us) {
    return fmt::format(
        R"j({{"distributedInfo": {{"rank": {}, "world_size": 2}}, "traceEvents": [)j"
        R"j({{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 5, "args": {{"External id": 3}}}},)j"
        R"j({{"ph": "X", "cat": "kernel", "name": "void gemm<128>(int)", "pid": 0, "tid": 7, "ts": 1, "dur": {},)j"
        R"j( "args": {{"device": {}, "stream": 7, "External id": 3}}}},)j"
        R"j({{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*)",)j"
        R"j( "pid": 0, "tid": 7, "ts": 100, "dur": {}, "args": {{"In msg nelems": 1048576, "Out msg nelems": 1048576,)j"
        R"j( "dtype": "BFloat16", "Process Group Ranks": "[0, 1]"}}}},)j"
        R"j({{"ph": "X", "cat": "kernel", "name": "zero", "ts": 200, "dur": 0}}]}})j",
        rank, gemm_us, rank, all_reduce_us);
  };
  SignatureOptions options;
  const SampleSet set = read_calibration_inputs(
      {temp_file("rank0.json", trace(0, 10, 50)), temp_file("rank1.json", trace(1, 12, 20))},
      options);
  REQUIRE(set.signatures().size() == 2);
  CHECK(set.signatures()[0].name == "gemm<128>");
  CHECK(set.signatures()[0].kernel_class == "gemm");
  CHECK(set.signatures()[1].name == "all_reduce [2MiB,4MiB) intra_node");
  REQUIRE(set.samples().size() == 3);
  CHECK(set.samples()[2].seconds == Near{20e-6});
  CHECK(set.matched_calls() == 1);
  CHECK(set.gpu_ids() == std::vector<std::string>{"rank 0", "rank 1"});
  CHECK(set.inputs()[0].zero_length == 1);
  CHECK(set.inputs()[0].first_zero_length.ends_with("rank0.json:1:571"));
  CHECK(set.inputs()[0].ignored == 1);

  // Two profiling windows of each rank: the n-th trace of every rank holds the same calls.
  const SampleSet windows = read_calibration_inputs(
      {temp_file("w1-rank0.json", trace(0, 10, 50)), temp_file("w1-rank1.json", trace(1, 12, 20)),
       temp_file("w2-rank0.json", trace(0, 10, 30)), temp_file("w2-rank1.json", trace(1, 12, 40))},
      options);
  CHECK(windows.matched_calls() == 2);
  std::vector<double> calls;
  for (const DurationSample& d : windows.samples()) {
    if (d.signature == 1) calls.push_back(d.seconds);
  }
  std::sort(calls.begin(), calls.end());
  REQUIRE(calls.size() == 2);
  CHECK(calls[0] == Near{20e-6});
  CHECK(calls[1] == Near{30e-6});
}

TEST_CASE("with by_shape, a kernel's signature has its launching operator's input shapes") {
  const std::string trace = R"j({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 5,
     "args": {"External id": 1, "Input Dims": [[8, 16], [16, 32]]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 10, "dur": 5,
     "args": {"External id": 2, "Input Dims": [[8, 16], [16, 64]]}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 1, "dur": 3, "args": {"External id": 1, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 11, "dur": 4, "args": {"External id": 2, "stream": 13}}]})j";
  const std::string path = temp_file("shapes.json", trace);
  SignatureOptions by_shape;
  by_shape.by_shape = true;
  const SampleSet shaped = read_calibration_inputs({path}, by_shape);
  REQUIRE(shaped.signatures().size() == 2);
  CHECK(shaped.signatures()[0].name == "gemm [[8,16],[16,32]]");
  CHECK(shaped.signatures()[1].name == "gemm [[8,16],[16,64]]");
  SignatureOptions by_stream;
  by_stream.by_stream = true;
  const SampleSet streamed = read_calibration_inputs({path}, by_stream);
  REQUIRE(streamed.signatures().size() == 2);
  CHECK(streamed.signatures()[1].name == "gemm stream 13");
  CHECK(read_calibration_inputs({path}, SignatureOptions{}).signatures().size() == 1);
}

TEST_CASE("bad traces and sample files are reported with file, line and column") {
  SignatureOptions options;
  SampleSet set(options);
  CHECK(input_error([&] {
          read_kineto_trace(temp_file("bad.json", "{\"traceEvents\": [\n  {\"ph\": \"X\",}]}"),
                            set);
        }).ends_with("bad.json:2:14: error: expected a member name in double quotes"));
  CHECK(
      input_error([&] {
        read_kineto_trace(
            temp_file(
                "cpu.json",
                R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "dur": 3}]})"),
            set);
      }).find("no GPU kernel events") != std::string::npos);
  CHECK(
      input_error([&] {
        read_kineto_trace(
            temp_file("neg.json",
                      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "dur": -3}]})"),
            set);
      }).ends_with("neg.json:1:18: error: negative duration -3 us of kernel 'k'"));
  CHECK(input_error([&] {
          read_samples_csv(temp_file("zero.csv", "name,duration_us\nmlp_up,12\nmlp_up,0\n"), set);
        })
            .ends_with("zero.csv:3:8: error: duration_us must be a positive number of "
                       "microseconds, got '0'"));
  CHECK(
      input_error([&] { read_samples_csv(temp_file("cols.csv", "name,duration_us,rack\n"), set); })
          .ends_with("cols.csv:1:18: error: unknown column 'rack': expected name, duration_us, "
                     "gpu, node, step"));
  CHECK(input_error([&] {
          read_samples_csv(temp_file("quote.csv", "name,duration_us\n\"a,b,1\n"), set);
        }).ends_with("quote.csv:2:1: error: unterminated quoted field"));
}

TEST_CASE("inputs found by fuzzing are reported, not crashed on") {
  SignatureOptions options;
  SampleSet set(options);
  // A repeated column used to index past the row's fields (heap-buffer-overflow).
  CHECK(input_error([&] {
          read_samples_csv(temp_file("repeat.csv", "name,duration_us,name\nk,1\n"), set);
        }).ends_with("repeat.csv:1:18: error: duplicate column 'name' (first at column 1)"));
  // Ranks beyond an int used to wrap; they are refused where their digits are.
  const std::string collective =
      R"({"distributedInfo": {"rank": 0}, "traceEvents": [{"ph": "X", "cat": "kernel", )"
      R"("name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "dur": 5, "ts": 1, "args": )"
      R"({"Process Group Ranks": "[0, RANK]", "In msg nelems": 4, "dtype": "Float"}}]})";
  auto with_rank = [&](const std::string& rank) {
    std::string text = collective;
    text.replace(text.find("RANK"), 4, rank);
    return text;
  };
  CHECK(
      input_error([&] { read_kineto_trace(temp_file("rank.json", with_rank("4294967296")), set); })
          .ends_with("rank.json:1:186: error: rank 4294967296 in \"Process Group Ranks\" is "
                     "beyond the largest supported, 2147483647"));
  SampleSet ok(options);
  read_kineto_trace(temp_file("rank-max.json", with_rank("2147483647")), ok);
  ok.match_calls();
  CHECK(ok.signatures().size() == 1);
  CHECK(ok.signatures()[0].name.ends_with("inter_node"));
  // JSON has no infinities; from_chars reads "-inf" and "-nan" all the same.
  CHECK(input_error([&] {
          read_kineto_trace(
              temp_file(
                  "inf.json",
                  R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "dur": -inf}]})"),
              set);
        }).ends_with("inf.json:1:67: error: invalid number"));
  CHECK(
      input_error([&] {
        read_kineto_trace(
            temp_file(
                "pid.json",
                R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "dur": 1, "pid": 1e300}]})"),
            set);
      })
          .ends_with("pid.json:1:18: error: a GPU kernel event's pid must be an integer from 0 to "
                     "2147483647, got 1e+300"));
  CHECK(
      input_error([&] {
        read_kineto_trace(
            temp_file(
                "pid-nan.json",
                R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "dur": 1, "pid": "nan"}]})"),
            set);
      }).find("pid must be an integer") != std::string::npos);
}

TEST_CASE("Otsu's threshold separates two populations and leaves one alone") {
  std::mt19937_64 rng(1);
  std::normal_distribution<double> transfer(0.0, 0.1), wait(3.0, 0.3);
  std::vector<double> two, one;
  for (int i = 0; i < 600; ++i) two.push_back(i < 400 ? transfer(rng) : wait(rng));
  for (int i = 0; i < 600; ++i) one.push_back(transfer(rng));
  std::sort(two.begin(), two.end());
  std::sort(one.begin(), one.end());
  const OtsuSplit split = otsu_split(two);
  CHECK(split.upper_begin == 400);
  CHECK(split.separability > 0.95);
  CHECK(otsu_split(one).separability < 0.7);
}

TEST_CASE("fits choose the family a sample came from, else keep the sample") {
  CalibrationOptions options;
  std::mt19937_64 rng(2);
  std::lognormal_distribution<double> lognormal(0.0, 0.05);
  std::vector<double> sample;
  for (int i = 0; i < 20000; ++i) sample.push_back(lognormal(rng));
  const SlowdownFit fit = fit_slowdowns(sample, options);
  CHECK(fit.chosen == "lognormal");
  CHECK(fit.distribution.sigma == Near{0.05, 0.03});
  CHECK(fit.ks_distance < 0.02);
  REQUIRE(fit.families.size() == 3);
  CHECK(fit.families[0].distribution.floor > 0);  // a slowdown's normal stays positive

  // A rare heavy tail (0.1% of kernels 3x slower): the body's family, the tail as measured.
  std::vector<double> tailed = sample;
  for (size_t i = 0; i < tailed.size(); i += 1000) tailed[i] *= 3;
  const SlowdownFit body = fit_slowdowns(tailed, options);
  CHECK(body.chosen == "lognormal+tail");
  REQUIRE(body.distribution.components.size() == 2);
  CHECK(body.distribution.components[0].distribution.sigma == Near{0.05, 0.03});
  CHECK(body.distribution.components[1].weight == Near{0.001});
  CHECK(body.distribution.components[1].distribution.family == DistributionSpec::Family::empirical);
  CHECK(body.ks_distance < 0.02);

  // Two well-separated modes: no family fits, the empirical quantiles stand in.
  std::vector<double> bimodal;
  for (int i = 0; i < 5000; ++i)
    bimodal.push_back(i % 10 == 0 ? 2.0 * lognormal(rng) : lognormal(rng));
  const SlowdownFit mixed = fit_slowdowns(bimodal, options);
  CHECK(mixed.chosen == "empirical");
  CHECK(mixed.distribution.samples.size() == options.empirical_points);
  CHECK(mixed.ks_distance < 0.01);
  CHECK(fit_slowdowns({1.5, 1.5, 1.5}, options).chosen == "constant");
}

TEST_CASE("calibration splits GPU speed from kernel noise and finds the slow node") {
  // 64 GPUs on 8 nodes, node 5 1.3x slower; GPU factors lognormal(0.03), kernel noise
  // lognormal(0.05) around per-kernel nominals.
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> gpu_speed(0.0, 0.03), noise(0.0, 0.05);
  SignatureOptions signature;
  SampleSet set(signature);
  const double nominal_s[] = {10e-6, 250e-6, 1.2e-3};
  const char* names[] = {"vectorized_elementwise_kernel", "sm90_xmma_gemm_bf16",
                         "flash_fwd_kernel"};
  std::vector<uint32_t> sigs;
  for (const char* name : names) sigs.push_back(set.kernel_signature(name, "", ""));
  for (int g = 0; g < 64; ++g) {
    const int node = g / 8;
    const int32_t gpu = set.gpu(fmt::format("rank {}", g), fmt::format("{}", node));
    const double factor = gpu_speed(rng) * (node == 5 ? 1.3 : 1.0);
    for (int i = 0; i < 300; ++i) {
      for (size_t k = 0; k < 3; ++k) set.add(sigs[k], gpu, nominal_s[k] * factor * noise(rng));
    }
  }
  CalibrationOptions options;
  const Calibration c = calibrate(set, options);
  REQUIRE(c.spatial.slow_nodes.size() == 1);
  CHECK(c.spatial.slow_nodes[0].id == "5");
  CHECK(c.spatial.slow_nodes[0].slowdown == Near{1.3, 0.03});
  CHECK(c.spatial.slow_gpus.empty());
  REQUIRE(c.spatial.per_gpu.has_value());
  const auto& per_gpu = c.spatial.per_gpu->distribution;
  const double per_gpu_sd = per_gpu.family == DistributionSpec::Family::lognormal
                                ? per_gpu.sigma
                                : std::sqrt(distribution_quantile(per_gpu, 0.8413) /
                                            distribution_quantile(per_gpu, 0.1587)) -
                                      1;
  CHECK(per_gpu_sd == Near{0.03, 0.25});
  CHECK(c.spatial.node_sigma < 0.015);
  // Kernel noise per class, around each signature's nominal.
  REQUIRE(c.targets.size() == 3);
  for (const TargetFit& t : c.targets) {
    CAPTURE(t.target);
    CHECK(t.fit.chosen == "lognormal");
    CHECK(t.fit.distribution.sigma == Near{0.05, 0.05});
  }
  for (const SignatureFit& s : c.signatures) {
    CHECK(s.nominal_s == Near{nominal_s[s.signature], 0.02});
  }
}

TEST_CASE("signatures with too few samples are reported, not fitted") {
  SampleSet set(SignatureOptions{});
  const uint32_t few = set.kernel_signature("rare_kernel", "", "");
  for (int i = 0; i < 5; ++i) set.add(few, -1, 1e-3 * (1 + i * 0.01));
  const Calibration c = calibrate(set, CalibrationOptions{});
  REQUIRE(c.signatures.size() == 1);
  CHECK_FALSE(c.signatures[0].fit.has_value());
  CHECK(c.signatures[0].skipped == "5 samples, fewer than 30");
  CHECK(c.targets.empty());
  CHECK(c.spatial.skipped == "the samples do not say which GPU ran them");
  CHECK(calibration_report(c, set).find("skipped: 5 samples, fewer than 30") != std::string::npos);
}

TEST_CASE("fitted distributions are written in the scenario syntax") {
  DistributionSpec d;
  d.family = DistributionSpec::Family::lognormal;
  d.mu = 0;
  d.sigma = 0.05;
  CHECK(distribution_yaml(d) == "{lognormal: {median: 1, sigma: 0.05}}");
  d.family = DistributionSpec::Family::gamma;
  d.shape = 50;
  d.scale = 0.02;
  CHECK(distribution_yaml(d) == "{gamma: {shape: 50, scale: 0.02}}");
  d.family = DistributionSpec::Family::empirical;
  d.samples = {1, 1.5};
  CHECK(distribution_yaml(d) == "{empirical: {samples: [1, 1.5]}}");
  CHECK(distribution_yaml(d, "x.txt") == "{empirical: {file: x.txt}}");
}
