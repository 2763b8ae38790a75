#include "duration_samples.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "core/text.hpp"

namespace prismsim {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains_any(const std::string& text, std::initializer_list<const char*> words) {
  return std::any_of(words.begin(), words.end(),
                     [&](const char* w) { return text.find(w) != std::string::npos; });
}

/// "1MiB" for 2^20; sizes are powers of two here.
std::string power_of_two_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  return fmt::format("{:g}{}", bytes, units[unit]);
}

}  // namespace

const char* to_string(SampleKind kind) {
  switch (kind) {
    case SampleKind::kernel:
      return "kernel";
    case SampleKind::collective:
      return "collective";
    case SampleKind::p2p:
      return "p2p";
  }
  return "?";
}

std::string normalise_kernel_name(std::string_view raw, bool strip_templates) {
  std::string name(raw);
  // The parameter list: the bracketed group that ends the name.
  if (!name.empty() && name.back() == ')') {
    int depth = 0;
    for (size_t i = name.size(); i-- > 0;) {
      if (name[i] == ')') ++depth;
      if (name[i] == '(' && --depth == 0) {
        name.erase(i);
        break;
      }
    }
  }
  // A return type or qualifiers before the name: what precedes its last space outside brackets.
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '<' || name[i] == '(') ++depth;
    if ((name[i] == '>' || name[i] == ')') && depth > 0) --depth;
    if (name[i] == ' ' && depth == 0 && i + 1 < name.size()) start = i + 1;
  }
  name.erase(0, start);
  if (strip_templates) {
    std::string out;
    int angle = 0;
    for (char c : name) {
      if (c == '<')
        ++angle;
      else if (c == '>' && angle > 0)
        --angle;
      else if (angle == 0)
        out += c;
    }
    name = out;
  }
  while (!name.empty() && name.back() == ' ') name.pop_back();
  return name.empty() ? std::string(raw) : name;
}

std::string kernel_class_by_name(std::string_view name) {
  const std::string n = lower(name);
  if (contains_any(n, {"flash", "fmha", "attention", "attn", "sdpa"})) return "attention";
  if (contains_any(
          n, {"gemm", "cutlass", "cublas", "xmma", "matmul", "nvjet", "_mma", "wgrad", "dgrad"})) {
    return "gemm";
  }
  if (contains_any(n, {"adam", "multi_tensor", "optimizer", "sgd", "lamb"})) return "optimizer";
  return "elementwise";
}

std::optional<CollectiveInfo> collective_from_name(std::string_view name) {
  std::string n = lower(name);
  std::erase(n, '_');
  // First match wins: "reduce" after the operations whose names contain it.
  static const std::pair<const char*, const char*> kOps[] = {
      {"send", "send_recv"},       {"recv", "send_recv"},       {"p2p", "send_recv"},
      {"allreduce", "all_reduce"}, {"allgather", "all_gather"}, {"reducescatter", "reduce_scatter"},
      {"alltoall", "all_to_all"},  {"broadcast", "broadcast"},  {"reduce", "reduce"}};
  for (const auto& [needle, op] : kOps) {
    if (n.find(needle) == std::string::npos) continue;
    CollectiveInfo info;
    info.op = op;
    if (info.op == "send_recv") info.kind = SampleKind::p2p;
    return info;
  }
  if (n.rfind("nccl", 0) != 0) return std::nullopt;
  CollectiveInfo info;
  info.op = "nccl";
  return info;
}

bool is_nccl_kernel(std::string_view name) { return lower(name.substr(0, 4)) == "nccl"; }

double dtype_bytes(std::string_view dtype) {
  const std::string d = lower(dtype);
  if (d == "double" || d == "long" || d == "int64" || d == "float64" || d == "complexfloat")
    return 8;
  if (d == "float" || d == "int" || d == "float32" || d == "int32") return 4;
  if (d == "bfloat16" || d == "half" || d == "float16" || d == "short") return 2;
  if (d == "byte" || d == "char" || d == "bool" || d.rfind("float8", 0) == 0 || d == "int8" ||
      d == "uint8") {
    return 1;
  }
  return 0;
}

CommScope scope_of_ranks(const std::vector<int>& ranks, int gpus_per_node) {
  std::set<int> nodes;
  for (int r : ranks) nodes.insert(r / gpus_per_node);
  return nodes.size() > 1 ? CommScope::inter_node : CommScope::intra_node;
}

int32_t SampleSet::gpu(const std::string& id, const std::string& node) {
  const auto [it, inserted] = gpu_of_id_.emplace(id, static_cast<int32_t>(gpu_ids_.size()));
  if (inserted) {
    gpu_ids_.push_back(id);
    int32_t node_index = -1;
    if (!node.empty()) {
      const auto [n, added] = node_of_id_.emplace(node, static_cast<int32_t>(node_ids_.size()));
      if (added) node_ids_.push_back(node);
      node_index = n->second;
    }
    gpu_nodes_.push_back(node_index);
  }
  return it->second;
}

uint32_t SampleSet::intern(Signature signature) {
  const auto [it, inserted] = signature_of_name_.emplace(std::pair{signature.kind, signature.name},
                                                         static_cast<uint32_t>(signatures_.size()));
  if (inserted) signatures_.push_back(std::move(signature));
  return it->second;
}

uint32_t SampleSet::kernel_signature(std::string_view raw_name, std::string_view shape,
                                     std::string_view stream) {
  std::string key(raw_name);
  if (options_.by_shape) (key += '\x1f') += shape;
  if (options_.by_stream) (key += '\x1f') += stream;
  if (const auto it = kernel_cache_.find(key); it != kernel_cache_.end()) return it->second;
  Signature s;
  const std::string name = normalise_kernel_name(raw_name, options_.strip_templates);
  s.name = name;
  if (options_.by_shape && !shape.empty()) s.name += fmt::format(" {}", shape);
  if (options_.by_stream && !stream.empty()) s.name += fmt::format(" stream {}", stream);
  const auto rule =
      std::find_if(options_.classes.begin(), options_.classes.end(),
                   [&](const auto& r) { return matches_name_pattern(r.first, name); });
  s.kernel_class = rule != options_.classes.end() ? rule->second : kernel_class_by_name(name);
  const uint32_t id = intern(std::move(s));
  kernel_cache_.emplace(std::move(key), id);
  return id;
}

uint32_t SampleSet::collective_signature(const CollectiveInfo& info) {
  Signature s;
  s.kind = info.kind;
  s.scope = info.scope;
  std::string size = "any size";
  if (info.bytes > 0) {
    const double low = std::exp2(std::floor(std::log2(info.bytes)));
    size = fmt::format("[{},{})", power_of_two_bytes(low), power_of_two_bytes(2 * low));
  }
  s.name = fmt::format("{} {} {}", info.op, size, info.scope ? to_string(*info.scope) : "scope?");
  return intern(std::move(s));
}

void SampleSet::add_call(const CollectiveInfo& info, const std::string& group, int window,
                         uint64_t seq, double seconds) {
  auto [it, added] = calls_.try_emplace({group, window, seq});
  Call& call = it->second;
  if (added) call.info = info;
  call.shortest_s = std::min(call.shortest_s, seconds);
  ++call.members;
}

void SampleSet::match_calls() {
  for (const auto& [key, call] : calls_) {
    add(collective_signature(call.info), -1, call.shortest_s);
    (call.members > 1 ? matched_calls_ : unmatched_calls_) += 1;
  }
  calls_.clear();
}

}  // namespace prismsim
