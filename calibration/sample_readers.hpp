#pragma once

#include <string>
#include <vector>

#include "duration_samples.hpp"

namespace prismsim {

/// Reads the GPU kernel events of a PyTorch profiler (Kineto) Chrome-trace JSON file into `set`:
/// events with "ph": "X" and "cat": "kernel", their "dur" in microseconds, device and stream from
/// "args" (else pid and tid). The GPU is "rank R" when the file has "distributedInfo" (node
/// R / gpus_per_node), else the file's device. NCCL kernels become collectives or transfers,
/// with their size and group from the profiler's "In msg nelems", "dtype" and "Process Group
/// Ranks" arguments when present. Throws InputError (file:line:col) for malformed JSON, negative
/// durations, or a file without GPU kernel events.
void read_kineto_trace(const std::string& path, SampleSet& set);

/// Reads a CSV of samples: a header naming the columns name and duration_us, and optionally gpu,
/// node and step; fields may be quoted ("..."). Names starting with "nccl" are collectives.
/// Throws InputError for unknown columns, missing fields or durations that are not positive.
void read_samples_csv(const std::string& path, SampleSet& set);

/// Reads an nccl-tests log: each size's out-of-place and in-place times are two samples of the
/// collective named in the file name (all_reduce, all_gather, ...) at that size, intra- or
/// inter-node by the hosts of its "# Rank" lines.
void read_nccl_tests_log(const std::string& path, SampleSet& set);

/// Reads `path` by its extension: .json a trace, .csv samples, anything else an nccl-tests log
/// (.gz is refused with a hint to decompress).
void read_calibration_input(const std::string& path, SampleSet& set);

/// Reads every file (reporting the errors of all of them at once, as one InputError), then
/// matches collective calls across ranks (SampleSet::match_calls).
SampleSet read_calibration_inputs(const std::vector<std::string>& paths,
                                  const SignatureOptions& options);

}  // namespace prismsim
