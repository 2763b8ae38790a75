#include "workload/job_shape.hpp"

#include <map>

#include "workload/job_builder.hpp"
#include "workload/transformer_job.hpp"

namespace prismsim {

void add_program(RunShape& shape, const Program& program, int64_t copies, bool shared) {
  RunShape one;
  one.streams = static_cast<int64_t>(program.streams.size());
  for (const auto& stream : program.streams) {
    bool in_compute = false;  // as the interpreter fuses: one execution per run of compute ops
    for (const Op& op : stream) {
      ++one.ops;
      const bool compute = is_compute(op);
      one.executions += compute && !in_compute;
      in_compute = compute;
      one.sends += std::holds_alternative<ops::Send>(op);
      one.collective_calls += std::holds_alternative<ops::Collective>(op);
    }
  }
  shape.simulated_ranks += copies;
  shape.streams += one.streams * copies;
  shape.ops += one.ops * (shared ? 1 : copies);
  shape.executions += one.executions * copies;
  shape.sends += one.sends * copies;
  shape.collective_calls += one.collective_calls * copies;
}

RunShape shape_of(const Job& job) {
  RunShape shape;
  shape.ranks = job.rank_count();
  std::map<const Program*, int64_t> copies;  // identical ranks may share a program
  for (const auto& program : job.program_of_rank) {
    if (program) ++copies[program.get()];
  }
  for (const auto& [program, count] : copies) add_program(shape, *program, count, true);
  return shape;
}

RunShape job_shape(const Scenario& scenario, const Topology& topology) {
  if (scenario.workload.kind == WorkloadKind::transformer) {
    return transformer_job_shape(scenario, topology);
  }
  return shape_of(build_job(scenario, topology));
}

}  // namespace prismsim
