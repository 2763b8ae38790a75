#include "runtime/rank_times.hpp"

namespace prismsim {

RankTimesRecorder::RankTimesRecorder(const Job& job)
    : job_(job), times_(static_cast<size_t>(job.rank_count())) {}

void RankTimesRecorder::on_compute(const ComputeSpan& span) {
  if (span.stream != 0) return;
  RankTimes& t = times_[static_cast<size_t>(span.rank)];
  t.compute_s += span.end_s - span.start_s - span.communication_s;
  t.layer_collective_s += span.communication_s;
}

void RankTimesRecorder::on_op(const OpSpan& span) {
  if (span.stream != 0) return;
  RankTimes& t = times_[static_cast<size_t>(span.rank)];
  const double seconds = span.end_s - span.start_s;
  if (std::holds_alternative<ops::Collective>(*span.op)) t.collective_s += seconds;
  if (std::holds_alternative<ops::Recv>(*span.op)) t.pipeline_wait_s += seconds;
  if (std::holds_alternative<ops::Wait>(*span.op)) t.stream_wait_s += seconds;
}

void RankTimesRecorder::on_run_end() {
  if (job_.representative.empty()) return;
  for (int rank = 0; rank < job_.rank_count(); ++rank) {
    times_[static_cast<size_t>(rank)] =
        times_[static_cast<size_t>(job_.representative[static_cast<size_t>(rank)])];
  }
}

}  // namespace prismsim
