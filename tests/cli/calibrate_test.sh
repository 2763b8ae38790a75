#!/usr/bin/env bash
# prismsim calibrate: the round trip (simulate with known variability, write Kineto traces,
# calibrate from them, simulate with the fitted section, compare), determinism, inputs of every
# format, and bad input. Usage: calibrate_test.sh PRISMSIM (from the repository root).
set -u
prismsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/checks.sh"
data=tests/cli/calibrate
scenario=$data/round-trip.yaml

# within NAME ACTUAL EXPECTED RELATIVE_TOLERANCE
within() {
  if python3 -c "import sys; a, e, t = map(float, sys.argv[1:]); sys.exit(abs(a - e) > t * abs(e))" "$2" "$3" "$4"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $1: $2 is not within $4 of $3"
  fi
}
# json FILE EXPRESSION: the expression's value, with `d` the parsed file and `param(text, key)`
# a number from a distribution's YAML text ("{lognormal: {median: 1, sigma: 0.04}}").
json() {
  python3 -c "
import json, re, sys
d = json.load(open(sys.argv[1]))
entry = lambda name: next(e['fit'] for e in d['entries'] if e['entry'] == name)
family = lambda fit, name: next(f['distribution'] for f in fit['families'] if f['family'] == name)
param = lambda text, key: float(re.search(key + r': ([-0-9.e+]+)', text).group(1))
print(eval(sys.argv[2]))" "$1" "$2"
}

# --- Round trip ----------------------------------------------------------------------------
# Known variability (round-trip.yaml): gemm lognormal sigma 0.04, attention gamma shape 50
# scale 0.02, elementwise normal sd 0.05, per-GPU lognormal sigma 0.03, node 2 1.3x slower,
# inter-node jitter lognormal(median 1, sigma 0.1), below 1 counted as 1.
expect "trace run" 0 "$prismsim" run "$scenario" --runs 1 --set simulation.steps=24 \
  --out "$tmp/traced" --trace "$tmp/trace" --trace-format kineto --trace-ranks 0-31
same "one Kineto file per traced rank" 32 "$(ls "$tmp/trace" | grep -c '^rank[0-9]*\.pt\.trace\.json$')"
expect "calibrate from the traces" 0 "$prismsim" calibrate "$tmp"/trace/*.json \
  --scenario "$scenario" --out "$tmp/fit.yaml" --report "$tmp/report.json"
cp "$tmp/out" "$tmp/report.txt"
r=$tmp/report.json
same "gemm noise is lognormal" lognormal "$(json "$r" "entry('kernels.gemm')['chosen']")"
within "gemm sigma" "$(json "$r" "param(entry('kernels.gemm')['distribution'], 'sigma')")" 0.04 0.05
within "elementwise stddev" \
  "$(json "$r" "param(family(entry('kernels.elementwise'), 'normal'), 'stddev')")" 0.05 0.05
within "attention gamma shape" \
  "$(json "$r" "param(family(entry('kernels.attention'), 'gamma'), 'shape')")" 50 0.15
within "per-GPU sigma (24 GPUs off the slow node)" \
  "$(json "$r" "param(family(d['spatial']['per_gpu'], 'lognormal'), 'sigma')")" 0.03 0.35
same "one outlier: node 2" "node 2" "$(json "$r" "' '.join(o['kind'] + ' ' + o['id'] for o in d['spatial']['outliers'])")"
within "slow node's slowdown" "$(json "$r" "d['spatial']['outliers'][0]['slowdown']")" 1.3 0.05
# p95 of max(1, lognormal(0, 0.1)) = exp(1.645 x 0.1).
within "inter-node jitter p95 (48 calls)" "$(json "$r" "entry('network.jitter.inter_node')['p95']")" 1.1789 0.10
# 24 steps x (the two stages' data-parallel all-reduces + the gradient norm's).
same "calls matched across ranks" 1 "$(grep -c '72 matched across ranks' "$tmp/report.txt")"
# Megatron's order puts data parallelism inside a node pair, so stages talk across nodes.
same "waits in the bubble set apart" 1 "$(grep -c '^p2p  *[0-9,]*  *[0-9,]* .* send_recv .* inter_node$' "$tmp/report.txt")"
grep -q '^  - {node: 2, slowdown: 1\.' "$tmp/fit.yaml" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL the section lists node 2 as slow"; }

# The step-time distributions with the known and with the fitted variability, same seeds.
expect "known variability" 0 "$prismsim" run "$scenario" --out "$tmp/known"
expect "fitted variability" 0 "$prismsim" run "$scenario" --set "variability=$tmp/fit.yaml" \
  --out "$tmp/fitted" --compare-to "$tmp/known/runs.csv"
s=$tmp/fitted/summary.json
within "step time p50 (fitted vs known)" "$(json "$s" "1 + d['comparison']['p50_error']")" 1 0.04
within "step time p95 (fitted vs known)" "$(json "$s" "1 + d['comparison']['p95_error']")" 1 0.04
same "KS distance of step times at most 0.4" True "$(json "$s" "d['comparison']['ks_distance'] <= 0.4")"

# Same inputs, same outputs.
mkdir -p "$tmp/again"
expect "calibrate again" 0 "$prismsim" calibrate "$tmp"/trace/*.json \
  --scenario "$scenario" --out "$tmp/again/fit.yaml" --report "$tmp/again/report.json"
for file in fit.yaml report.json fit.network.jitter.inter_node.txt; do
  # (but for the command line in the section's second line)
  same "identical $file" "" "$(diff <(sed 2d "$tmp/$file") <(sed 2d "$tmp/again/$file"))"
done

# --- Other inputs ----------------------------------------------------------------------------
# samples FILE GPUS: a GEMM on GPUS GPUs of two nodes, and a rare kernel.
samples() {
  python3 - "$1" "$2" <<'EOF'
import random, sys
random.seed(5)
gpus = int(sys.argv[2])
with open(sys.argv[1], "w") as f:
    f.write("name,duration_us,gpu,node,step\n")
    for i in range(400):
        g = i % gpus
        f.write(f'"void gemm<128, 4>(float*, int)",{100 * random.lognormvariate(0, 0.05):.3f},{g},{g * 2 // gpus},{i // gpus}\n')
    for i in range(5):
        f.write(f"rare_kernel,{20 + i},0,0,{i}\n")
EOF
}
samples "$tmp/samples.csv" 8
expect "calibrate from samples" 0 "$prismsim" calibrate "$tmp/samples.csv" --out "$tmp/csv.yaml"
same "return type and parameters stripped" 1 "$(grep -c '^kernel  *400 .*  gemm<128, 4>$' "$tmp/out")"
same "a small signature is reported as skipped" 1 \
  "$(grep -c '^kernel  *5  *-  skipped: 5 samples, fewer than 30  *rare_kernel$' "$tmp/out")"
expect "calibrate with --strip-templates" 0 "$prismsim" calibrate "$tmp/samples.csv" --out "$tmp/csv.yaml" \
  --strip-templates
same "template arguments stripped" 1 "$(grep -c '^kernel  *400 .*  gemm$' "$tmp/out")"
same "GPUs and nodes from the gpu and node columns" 1 "$(grep -c '^spatial: 8 GPUs on 2 nodes' "$tmp/out")"
samples "$tmp/four.csv" 4
expect "calibrate from samples of 4 GPUs" 0 "$prismsim" calibrate "$tmp/four.csv" --out "$tmp/four.yaml"
same "spatial fit needs 8 GPUs" 1 \
  "$(grep -c '^# gpus: not fitted: 4 GPUs with enough samples, fewer than 8' "$tmp/four.yaml")"
expect "calibrate from an nccl-tests log" 0 "$prismsim" calibrate "$data/all_reduce_2nodes.log" \
  --min-samples 2 --out "$tmp/nccl.yaml"
same "sizes are signatures, two nodes are inter-node" 3 "$(grep -c '^collective  *2 .*  all_reduce \[[0-9]MiB,[0-9]MiB) inter_node$' "$tmp/out")"
same "collective jitter in the section" 1 "$(grep -c '^    inter_node: ' "$tmp/nccl.yaml")"

# --- Plots (when matplotlib is there) --------------------------------------------------------
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  expect "plots" 0 "$prismsim" calibrate "$tmp"/trace/rank0.pt.trace.json "$tmp"/trace/rank1.pt.trace.json \
    --scenario "$scenario" --out "$tmp/p.yaml" --plots "$tmp/plots"
  same "a plot per section entry" 1 "$([ -s "$tmp/plots/calibration-kernels-gemm.png" ] && echo 1)"
else
  echo "SKIP calibrate --plots: matplotlib is not installed"
fi

# --- Bad input ---------------------------------------------------------------------------------
expect "malformed JSON" 2 "$prismsim" calibrate "$data/malformed.json" --out "$tmp/x.yaml"
same "malformed JSON message" "$data/malformed.json:3:3: error: expected a member name in double quotes" "$(cat "$tmp/err")"
expect "every bad file at once" 2 "$prismsim" calibrate "$data/cpu-only.json" "$data/negative.csv" --out "$tmp/x.yaml"
same "no GPU kernels, and a negative duration" \
  "$data/cpu-only.json: error: no GPU kernel events: expected events with \"ph\": \"X\" and \"cat\": \"kernel\" (a PyTorch profiler trace recorded with CUDA activities)
$data/negative.csv:3:8: error: duration_us must be a positive number of microseconds, got '-1'" "$(cat "$tmp/err")"
expect "missing file" 2 "$prismsim" calibrate "$tmp/absent.json" --out "$tmp/x.yaml"
same "missing file message" "$tmp/absent.json: error: cannot read the file: No such file or directory" "$(cat "$tmp/err")"
expect "compressed trace" 2 "$prismsim" calibrate "$tmp/rank0.pt.trace.json.gz" --out "$tmp/x.yaml"
same "compressed trace message" \
  "$tmp/rank0.pt.trace.json.gz: error: compressed files are not read: decompress it first (gunzip -k $tmp/rank0.pt.trace.json.gz)" \
  "$(cat "$tmp/err")"
expect "no inputs" 2 "$prismsim" calibrate --out "$tmp/x.yaml"
expect "bad --class" 2 "$prismsim" calibrate "$tmp/samples.csv" --class 'mlp*=matmul'
same "bad --class message" 1 "$(grep -c "invalid --class 'mlp\*=matmul'" "$tmp/err")"
expect "--set without --scenario" 2 "$prismsim" calibrate "$tmp/samples.csv" --set a=b
expect "unwritable output" 2 "$prismsim" calibrate "$tmp/samples.csv" --out "$tmp/no/such/dir/x.yaml"
[ ! -e "$tmp/x.yaml" ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL bad input wrote a section"; }

echo "calibrate: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
