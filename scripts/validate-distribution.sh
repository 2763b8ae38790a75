#!/usr/bin/env bash
# Step-time distributions against measured ones, split in halves (a benchmark, not a test;
# docs/calibration.md, "Validation of the distribution"):
#  - ByteDance job SE: `prismsim calibrate` on the op timeline of the first half of the steps,
#    simulate workloads/validation/bytedance-se.yaml with the calibrated stage times and
#    variability and its stand-in network sized to the first half's transfer times, compare
#    with the second half's measured makespans (steps-SE.csv).
#  - Megatron CI A100 cases: no op timelines, only iteration times; from the first half, the time
#    the model lacks (`host.step`, its median minus the simulated deterministic step) and the
#    spread as a step factor (`levels.step`, empirical); the second half is compared. Scenarios: calibration/cases/megatron-ci-gpt.yaml with each
#    case's sets from calibration/cases/megatron-ci.csv (tensor-parallel collectives charged
#    analytically, for speed).
# Prints mean error, CV ratio, p95/p50 ratio (simulated over measured), the two-sample KS distance,
# its 5% critical value, and the KS distance between the two measured halves.
#
# usage: scripts/validate-distribution.sh [PRISMSIM] [OUT_DIR]
#   PRISMSIM default build/release/simulator/prismsim (else build/test/simulator/prismsim); OUT_DIR default
#   out/validate-distribution. SE_RUNS x SE_STEPS simulated steps (default 20 x 50 = 1,000).
#   Reads ../shared/validation (or ../../shared/validation; VALIDATION_DIR overrides); writes only under OUT_DIR.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
prismsim=${1:-}
if [ -z "$prismsim" ]; then
  for p in "$here/build/release/simulator/prismsim" "$here/build/test/simulator/prismsim"; do
    [ -x "$p" ] && { prismsim=$p; break; }
  done
fi
[ -x "${prismsim:-}" ] || { echo "validate-distribution: no prismsim binary (build it first)" >&2; exit 2; }
out=${2:-$here/out/validate-distribution}
data=${VALIDATION_DIR:-$here/../shared/validation}
[ -d "$data" ] || data=$here/../../shared/validation  # from a worktree under wt/
se_runs=${SE_RUNS:-20}
se_steps=${SE_STEPS:-50}
python=${PRISMSIM_PYTHON:-python3}
mkdir -p "$out"

stats=$(cat <<'PY'
import csv, math, sys
def read(path, column="step_time_s"):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return [float(r[column]) for r in rows]
def q(v, p):
    v = sorted(v); pos = p * (len(v) - 1); lo = int(math.floor(pos)); hi = min(lo + 1, len(v) - 1)
    return v[lo] + (pos - lo) * (v[hi] - v[lo])
def mean(v): return sum(v) / len(v)
def cv(v):
    m = mean(v); return math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1)) / m
def ks(a, b):
    a = sorted(a); b = sorted(b); i = j = 0; d = 0.0
    while i < len(a) and j < len(b):
        x = min(a[i], b[j])
        while i < len(a) and a[i] <= x: i += 1
        while j < len(b) and b[j] <= x: j += 1
        d = max(d, abs(i / len(a) - j / len(b)))
    return d
def compare(name, sim, second, halves, verdict):
    # verdict(KS, its 5% critical value) -> the last column
    crit = 1.358 * math.sqrt((len(sim) + len(second)) / (len(sim) * len(second)))
    d = ks(sim, second)
    print(f"{name:<58} {len(sim):>6} {len(second):>4} {mean(sim)/mean(second)-1:>+8.2%} "
          f"{cv(sim)/cv(second):>6.2f} {(q(sim,.95)/q(sim,.5))/(q(second,.95)/q(second,.5)):>7.3f} "
          f"{d:>6.3f} {crit:>6.3f} {halves:>6.3f} {verdict(d, crit):>5}")
def row(name, sim, first, second):
    halves = ks(first, second)
    compare(name, sim, second, halves, lambda d, crit: "yes" if d <= max(crit, halves) else "no")
    # The data's own floor: the measured first half in place of the simulation.
    compare("  (measured first half)", first, second, halves, lambda d, crit: "-")
PY
)

header() {
  printf '%-58s %6s %4s %8s %6s %7s %6s %6s %6s %5s\n' case sim meas "mean err" "CV x" "p95/p50" \
    KS "KS 5%" halves "KS ok"
}

# --- ByteDance SE ------------------------------------------------------------------------------
se="$data/bytedance-stragglers-se"
"$python" - "$se/trace-SE.csv" "$se/steps-SE.csv" "$out" <<'PY'
import csv, sys
trace, steps_csv, out = sys.argv[1:4]
with open(steps_csv) as f:
    steps = [r for r in csv.DictReader(f)]
ids = sorted(int(r["step"]) for r in steps)
first = set(ids[: len(ids) // 2])
with open(trace) as f, open(f"{out}/se-first-half.csv", "w") as o:
    header = f.readline(); o.write(header)
    col = header.strip().split(",").index("step")
    for line in f:
        if int(line.split(",")[col]) in first: o.write(line)
for name, keep in (("first", True), ("second", False)):
    with open(f"{out}/se-steps-{name}.csv", "w") as o:
        o.write("step,step_time_s\n")
        for r in steps:
            if (int(r["step"]) in first) == keep: o.write(f"{r['step']},{r['step_time_s']}\n")
print(f"SE: {len(ids)} steps; calibrated on the first {len(first)} (steps {min(first)}-{max(first)})")
PY
"$prismsim" calibrate "$out/se-first-half.csv" --out "$out/se-variability.yaml" \
  --report "$out/se-calibration.json" > "$out/se-calibrate.txt"
stage_times=$("$python" - "$out/se-calibration.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = {}
for s in d["stages"]:
    t.setdefault(s["stage"], {})[s["direction"]] = s["geomean_s"]
print("[" + ", ".join("{forward: %.6gs, backward: %.6gs}" % (t[k]["forward"], t[k]["backward"])
                      for k in sorted(t)) + "]")
PY
)
echo "SE stage times (geometric means of the first half): $stage_times"
# The network and the activation size: GPU, fabric and model are not stated, so the stand-in's
# NIC bandwidth and sequence length are the ones that give the first half's measured transfer
# times (calibration report: a collective's transfer is the last member's end minus its start, a
# pipeline transfer the receive's end minus the later start). The bandwidth scales with the
# geometric mean of measured over simulated over the bandwidth-bound collectives (transfer >= 1
# ms), the sequence (the activation a stage sends) with the forward pipeline transfer; simulated
# from a deterministic run's timeline (ranks 0 and 32: the two stages of replica 0), three times
# (latency terms make one scaling inexact), from fixed starts (H100's 400 Gb/s, 4,096 tokens)
# whatever the scenario holds.
nic=400Gbps
sequence=4096
for round in 1 2 3; do
  "$prismsim" run "$here/workloads/validation/bytedance-se.yaml" --out "$out/se-network" \
    --set "parallelism.stage_times=$stage_times" --set "platform.node.nic.bandwidth=$nic" \
    --set "workload.model.sequence=$sequence" --runs 1 --set simulation.steps=2 \
    --trace "$out/se-network/trace.json" --trace-ranks 0,32 > /dev/null
  read -r nic sequence < <("$python" - "$out/se-calibration.json" "$out/se-network/trace.json" \
    "$nic" "$sequence" <<'PY'
import json, math, sys
simulated_name = {"params-all-gather": "dp all_gather", "grads-reduce-scatter": "dp reduce_scatter",
                  "embedding-grads-all-reduce": "embedding all_reduce"}
report = json.load(open(sys.argv[1]))
measured = {c["optype"]: c["transfer_p50_s"] for c in report["collectives"]}
p2p = {p["direction"]: p.get("transfer_p50_s", 0) for p in report.get("pipeline", [])}
trace = json.load(open(sys.argv[2]))
events = trace["traceEvents"] if isinstance(trace, dict) else trace
simulated = {}
for e in events:
    if e.get("ph") == "X":
        simulated.setdefault(e.get("name"), []).append(e["dur"] * 1e-6)
logs = [math.log(measured[op] / min(simulated[name]))
        for op, name in simulated_name.items() if measured.get(op, 0) >= 1e-3 and name in simulated]
if not logs or not p2p.get("forward") or "recv from rank 0" not in simulated:
    sys.exit("validate-distribution: the report or the trace lacks the transfers to size the network")
gbps = float(sys.argv[3].removesuffix("Gbps")) / math.exp(sum(logs) / len(logs))
# The stage-1 rank's forward receives from rank 0: in a deterministic run every one after the
# first starts with its send, so the shortest is the transfer alone.
sequence = int(sys.argv[4]) * p2p["forward"] / min(simulated["recv from rank 0"])
print(f"{gbps:.4g}Gbps {max(8, round(sequence / 8) * 8)}")
PY
)
done
echo "SE network: NIC bandwidth $nic per GPU, sequence $sequence (first half's transfer times)"
"$prismsim" run "$here/workloads/validation/bytedance-se.yaml" --out "$out/se-run" \
  --set "parallelism.stage_times=$stage_times" --set "variability=$out/se-variability.yaml" \
  --set "platform.node.nic.bandwidth=$nic" --set "workload.model.sequence=$sequence" \
  --runs "$se_runs" --set "simulation.steps=$se_steps" --jobs "${JOBS:-2}" \
  --compare-to "$out/se-steps-second.csv" > "$out/se-run.txt"
echo
header
"$python" - "$out" <<PY
$stats
import sys
out = sys.argv[1]
row("bytedance-stragglers-se", read(f"{out}/se-run/runs.csv"), read(f"{out}/se-steps-first.csv"),
    read(f"{out}/se-steps-second.csv"))
PY

# --- Megatron CI A100 ----------------------------------------------------------------------------
# Each case's scenario: calibration/cases/megatron-ci-gpt.yaml with the sets of
# calibration/cases/megatron-ci.csv (the "(all)" row and the case's own; docs/validation.md).
mc="$data/megatron-ci-a100"
cases="$here/calibration/cases/megatron-ci.csv"
scenario="$here/calibration/cases/megatron-ci-gpt.yaml"
[ -f "$cases" ] || { echo "no Megatron CI scenarios: $cases is missing"; exit 0; }
for dir in "$mc"/*/; do
  case_name=$(basename "$dir")
  sets=$("$python" - "$cases" "$case_name" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
found = [r for r in rows if r["case"] == sys.argv[2]]
if not found:
    sys.exit(1)
for r in [r for r in rows if r["case"] == "(all)"] + found:
    for s in filter(None, r["sets"].split(";")):
        print(s)
PY
) || { printf '%-58s %s\n' "$case_name" "no scenario in $cases"; continue; }
  args=(--set engine.layer_collectives=analytic)
  while IFS= read -r s; do args+=(--set "$s"); done <<< "$sets"
  "$python" - "$dir/iteration_time.csv" "$out/mc-$case_name" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]))
        if int(r["iteration"]) >= 5 and int(r["iteration"]) not in (51, 52)]
half = len(rows) // 2
for name, part in (("first", rows[:half]), ("second", rows[half:])):
    with open(f"{sys.argv[2]}-{name}.csv", "w") as o:
        o.write("iteration,step_time_s\n")
        for r in part: o.write(f"{r['iteration']},{r['iteration_time_s']}\n")
PY
  if ! "$prismsim" run "$scenario" "${args[@]}" --out "$out/mc-$case_name-det" \
      > "$out/mc-$case_name-det.txt" 2>&1; then
    printf '%-58s %s\n' "$case_name" "not simulated: $(head -1 "$out/mc-$case_name-det.txt")"
    continue
  fi
  # How much the step moves with a factor on all compute (1.1, deterministic otherwise): the
  # compute on the step's critical path, which a shared step factor scales.
  printf 'levels:\n  step: 1.1\n' > "$out/mc-$case_name-sensitivity.yaml"
  if ! "$prismsim" run "$scenario" "${args[@]}" --out "$out/mc-$case_name-sensitivity" \
      --set "variability=$out/mc-$case_name-sensitivity.yaml" \
      > "$out/mc-$case_name-sensitivity.txt" 2>&1; then
    printf '%-58s %s\n' "$case_name" "not simulated: $(head -1 "$out/mc-$case_name-sensitivity.txt")"
    continue
  fi
  # From the first half: host.step = its median minus the simulated deterministic step (the time
  # the model lacks, the same on every GPU), and levels.step = 1 + (t - median) / critical-path
  # compute (empirical), a factor shared by every GPU in a step on all compute: each measured
  # step's deviation from the median, carried by the compute that sets the step.
  "$python" - "$out/mc-$case_name-det/runs.csv" "$out/mc-$case_name-sensitivity/runs.csv" \
    "$out/mc-$case_name-first.csv" "$out/mc-$case_name-variability.yaml" <<'PY'
import csv, sys
det = float(next(csv.DictReader(open(sys.argv[1])))["step_time_s"])
scaled = float(next(csv.DictReader(open(sys.argv[2])))["step_time_s"])
critical = (scaled - det) / 0.1
if critical <= 0:
    sys.exit(f"validate-distribution: the step does not move with its compute ({det} s, {scaled} s)")
first = [float(r["step_time_s"]) for r in csv.DictReader(open(sys.argv[3]))]
median = sorted(first)[len(first) // 2]
with open(sys.argv[4], "w") as o:
    o.write(f"# first-half median {median:.6g} s, simulated deterministic step {det:.6g} s, "
            f"critical-path compute {critical:.6g} s\n")
    o.write(f"host:\n  step: {max(median - det, 1e-9):.6g}s\n")
    o.write("levels:\n  step: {empirical: {samples: [" +
            ", ".join(f"{max(1 + (v - median) / critical, 1e-3):.6g}" for v in first) + "]}}\n")
PY
  "$prismsim" run "$scenario" "${args[@]}" --out "$out/mc-$case_name-run" --runs 20 \
    --set simulation.steps=50 --set "variability=$out/mc-$case_name-variability.yaml" \
    --jobs "${JOBS:-2}" > /dev/null
  "$python" - "$out" "$case_name" <<PY
$stats
import sys
out, name = sys.argv[1:3]
row(name, read(f"{out}/mc-{name}-run/runs.csv"), read(f"{out}/mc-{name}-first.csv"),
    read(f"{out}/mc-{name}-second.csv"))
PY
done
