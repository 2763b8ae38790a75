#pragma once

#include <cstdint>

#include "config/scenario.hpp"
#include "platform/topology.hpp"
#include "workload/program.hpp"

namespace prismsim {

/// What a run of a job holds and does per step, counted over the simulated ranks: the input of
/// the cost estimate (workload/run_estimate).
struct RunShape {
  int64_t ranks = 0;             ///< all ranks, one GPU each
  int64_t simulated_ranks = 0;   ///< ranks with actors (see Job::representative)
  int64_t streams = 0;           ///< actors: the simulated ranks' streams
  int64_t ops = 0;               ///< ops held in memory: of every distinct program, all streams
  int64_t executions = 0;        ///< fused compute executions per step (runs of compute ops)
  int64_t sends = 0;             ///< point-to-point sends per step
  int64_t collective_calls = 0;  ///< collective calls per step, one per member that calls

  bool operator==(const RunShape&) const = default;
};

/// The shape of `job`, counted over every simulated rank's program.
RunShape shape_of(const Job& job);

/// The shape of the job of `scenario` without building every rank's program: a transformer's
/// ranks of one pipeline stage have programs of one shape, so one program per stage is built
/// and counted for all (equal to shape_of(build_job(...)); a test checks it).
RunShape job_shape(const Scenario& scenario, const Topology& topology);

/// Adds to `shape` `copies` simulated ranks running `program`; `shared`: they share one copy of
/// it (else each holds its own).
void add_program(RunShape& shape, const Program& program, int64_t copies, bool shared);

}  // namespace prismsim
