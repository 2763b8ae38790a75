#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "config/variability_spec.hpp"

namespace prismsim {

/// What a measured duration is of.
enum class SampleKind { kernel, collective, p2p };
const char* to_string(SampleKind kind);

/// The group a duration is fitted with: a kernel by normalised name (and shape or stream when
/// asked), a collective or point-to-point transfer by operation, size bucket and scope.
struct Signature {
  SampleKind kind = SampleKind::kernel;
  std::string name;          ///< "at::native::vectorized_elementwise_kernel", "all_reduce 1-2MiB"
  std::string kernel_class;  ///< kernels: gemm, attention, elementwise or optimizer
  std::optional<CommScope> scope;  ///< collectives and transfers, when the group is known
};

/// One measured duration.
struct DurationSample {
  uint32_t signature = 0;
  int32_t gpu = -1;  ///< index into SampleSet::gpu_ids, or -1 when unknown
  double seconds = 0;
  int64_t step = -1;  ///< training step (ProfilerStep# annotation, CSV step column), -1 unknown
};

/// Where samples came from, for the provenance of the fitted section.
struct InputSummary {
  std::string path;
  std::string format;  ///< "kineto trace", "samples csv", "nccl-tests log"
  size_t samples = 0;
  size_t ignored = 0;             ///< events that are not GPU kernels (CPU ops, memcpy, ...)
  size_t zero_length = 0;         ///< GPU kernels of zero duration (profiler rounding), skipped
  std::string first_zero_length;  ///< "file:line:col" of the first of them
  size_t steps = 0;  ///< distinct steps its samples carry (ProfilerStep# windows, step column)
};

/// Options that decide signatures and identities.
struct SignatureOptions {
  bool by_shape = false;   ///< kernels: add the launching operator's input shapes
  bool by_stream = false;  ///< kernels: add the stream
  /// Kernels: merge template instantiations (PyTorch's elementwise ops are one template with a
  /// functor argument: merged, different operations share a signature).
  bool strip_templates = false;
  int gpus_per_node = 8;  ///< nodes of ranks (rank / gpus_per_node) and of collective groups
  /// Kernel name patterns (exact, or a prefix ending in '*') and their class, tried first.
  std::vector<std::pair<std::string, std::string>> classes;
};

/// A collective kernel's description, as far as the input gives it.
struct CollectiveInfo {
  SampleKind kind = SampleKind::collective;  ///< or p2p for send/receive
  std::string op;                            ///< all_reduce, all_gather, ..., send_recv
  double bytes = 0;                          ///< 0 when unknown
  std::optional<CommScope> scope;
};

/// All measured durations of a calibration, by signature and GPU.
class SampleSet {
 public:
  explicit SampleSet(SignatureOptions options) : options_(std::move(options)) {}

  const SignatureOptions& options() const { return options_; }
  /// The GPU named `id` (interned), on node `node` when known ("" = unknown).
  int32_t gpu(const std::string& id, const std::string& node);
  /// A kernel's signature from its raw name (e.g. a demangled CUDA name), shape and stream.
  uint32_t kernel_signature(std::string_view raw_name, std::string_view shape,
                            std::string_view stream);
  /// A collective's signature.
  uint32_t collective_signature(const CollectiveInfo& info);
  void add(uint32_t signature, int32_t gpu, double seconds, int64_t step = -1) {
    samples_.push_back({signature, gpu, seconds, step});
  }
  void add_input(InputSummary input) { inputs_.push_back(std::move(input)); }
  /// One member's duration of the `seq`-th call on the group of ranks `group` (its key) in the
  /// member's `window`-th trace: calls are matched across ranks by `match_calls`.
  void add_call(const CollectiveInfo& info, const std::string& group, int window, uint64_t seq,
                double seconds);
  /// How many traces of rank `rank` were read before this one (profiling windows of one run,
  /// in the order given: the n-th window of every rank is the same).
  int next_window(int rank) { return windows_of_rank_[rank]++; }
  /// Turns every call seen on several ranks into one sample: the shortest of its members'
  /// durations, since the last member to arrive waits for no one and measures the collective
  /// itself. A call seen on one rank only gives that rank's duration.
  void match_calls();
  size_t matched_calls() const { return matched_calls_; }
  size_t unmatched_calls() const { return unmatched_calls_; }

  const std::vector<Signature>& signatures() const { return signatures_; }
  const std::vector<DurationSample>& samples() const { return samples_; }
  const std::vector<std::string>& gpu_ids() const { return gpu_ids_; }
  /// Node of each GPU: index into node_ids(), or -1.
  const std::vector<int32_t>& gpu_nodes() const { return gpu_nodes_; }
  const std::vector<std::string>& node_ids() const { return node_ids_; }
  const std::vector<InputSummary>& inputs() const { return inputs_; }

 private:
  uint32_t intern(Signature signature);

  SignatureOptions options_;
  std::vector<Signature> signatures_;
  std::map<std::pair<SampleKind, std::string>, uint32_t> signature_of_name_;
  std::unordered_map<std::string, uint32_t> kernel_cache_;  ///< raw name, shape, stream
  std::vector<DurationSample> samples_;
  std::vector<std::string> gpu_ids_;
  std::vector<int32_t> gpu_nodes_;
  std::map<std::string, int32_t> gpu_of_id_;
  std::vector<std::string> node_ids_;
  std::map<std::string, int32_t> node_of_id_;
  std::vector<InputSummary> inputs_;
  struct Call {
    CollectiveInfo info;
    double shortest_s = std::numeric_limits<double>::infinity();
    size_t members = 0;
  };
  std::map<std::tuple<std::string, int, uint64_t>, Call> calls_;
  std::map<int, int> windows_of_rank_;
  size_t matched_calls_ = 0, unmatched_calls_ = 0;
};

/// A kernel name without return type and parameter list, and without template arguments when
/// `strip_templates`: "void at::native::elementwise_kernel<128, 4, F>(int, F)" ->
/// "at::native::elementwise_kernel<128, 4, F>" or "at::native::elementwise_kernel".
std::string normalise_kernel_name(std::string_view raw, bool strip_templates);

/// The class of a normalised kernel name by common library naming (cuBLAS/CUTLASS GEMMs, flash
/// attention, fused optimizers); anything else is elementwise.
std::string kernel_class_by_name(std::string_view name);

/// The collective an NCCL kernel name or a profiler's collective name stands for
/// ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL" -> all_reduce), or nothing.
std::optional<CollectiveInfo> collective_from_name(std::string_view name);
/// Whether a GPU kernel's name is NCCL's ("nccl..." in any case): a collective or transfer.
bool is_nccl_kernel(std::string_view name);

/// Bytes of one element of a profiler's dtype name ("BFloat16" -> 2), or 0 when unknown.
double dtype_bytes(std::string_view dtype);

/// Scope of a group of global ranks with `gpus_per_node` GPUs per node.
CommScope scope_of_ranks(const std::vector<int>& ranks, int gpus_per_node);

}  // namespace prismsim
