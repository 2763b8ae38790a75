#pragma once

#include "config/scenario.hpp"

namespace prismsim::fuzz {

/// What `prismsim check` and the first steps of `run` derive from a loaded scenario, checked
/// for finite values: the memory estimate (and its refusal, an InputError), the samplers of
/// every distribution at their extreme draws, and for small jobs (at most 64 ranks, a few
/// thousand passes) the topology and every rank's program. Aborts on a non-finite value.
void check_derived(const Scenario& scenario);

}  // namespace prismsim::fuzz
