#!/usr/bin/env bash
# scripts/plot.py: each subcommand writes a PNG where it says; bad input exits 2 with a message.
# usage: plot_test.sh [PLOT_PY]   (default: scripts/plot.py of this repository)
# Skips (exit 0) when python3 or matplotlib is missing. PYTHON=... picks the interpreter.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
script=${1:-$root/scripts/plot.py}

# The first interpreter that has matplotlib (a pyenv python3 may lack Debian's python3-matplotlib).
python=
found=
for candidate in ${PYTHON:-} python3 /usr/bin/python3; do
  command -v "$candidate" >/dev/null 2>&1 || continue
  found=$candidate
  if "$candidate" -c "import matplotlib" >/dev/null 2>&1; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  if [ -z "$found" ]; then
    echo "SKIP plot_test: python3 is not installed"
  else
    echo "SKIP plot_test: matplotlib is not installed (Debian: apt-get install python3-matplotlib)"
  fi
  exit 0
fi
if [ ! -f "$script" ]; then
  echo "FAIL plot_test: no script at '$script'"
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/checks.sh"
plot() { "$python" "$script" "$@"; }
png() {  # png NAME FILE : FILE exists, is non-empty and starts with the PNG signature
  if [ -s "$2" ] && [ "$(head -c 8 "$2" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $1: '$2' is not a non-empty PNG"
  fi
}
refused() {  # refused NAME ARGS... : exit 2, an error message on stderr, no traceback
  local name=$1
  shift
  expect "$name" 2 plot "$@"
  same "$name: message" 1 "$(grep -c 'error: ' "$tmp/err")"
  same "$name: no traceback" 0 "$(grep -c 'Traceback' "$tmp/err")"
}

# Fake study directories, as prismsim run --out writes them. Run 3 of study a is cut short.
study() {  # study DIR SCENARIO SCALE
  mkdir -p "$1"
  awk -v scale="$3" 'BEGIN {
    print "run,seed,step,step_time_s"
    for (r = 0; r < 40; r++)
      for (s = 0; s < (r == 3 ? 2 : 5); s++)
        printf "%d,%d,%d,%.9g\n", r, 1000 + r, s, scale * (0.4 + 0.001 * ((r * 7 + s * 13) % 17) + (s == 4 && r % 9 == 0 ? 0.05 : 0))
  }' >"$1/runs.csv"
  cat >"$1/summary.json" <<EOF
{
  "scenario": "$2",
  "runs": 40,
  "steps": 5,
  "step_time_s": {"count": 197, "mean": 0.41, "std": 0.01, "min": 0.4, "p50": 0.408, "p90": 0.414,
                  "p95": 0.415, "p99": 0.45, "max": 0.456,
                  "ci": {"p50": [0.407, 0.409], "p95": [0.414, 0.416], "p99": [0.44, 0.455]}},
  "job_time_s": {"count": 39, "mean": 2.05, "std": 0.02, "min": 2.02, "p50": 2.04, "p90": 2.09,
                 "p95": 2.1, "p99": 2.11, "max": 2.11},
  "deadlines": [{"deadline_s": 2.08, "p_miss": 0.15}],
  "baseline": {"step_time_s": 0.4, "job_time_s": 2.0}
}
EOF
}
study "$tmp/a" dp-test 1.0
study "$tmp/b" dp-test-slow 1.1

# A sweep, as prismsim sweep writes it: bandwidths with units, and a second swept setting.
metrics=""
for m in step_time job_time; do
  for s in mean std min p50 p90 p95 p99 max; do metrics="$metrics,${m}_${s}_s"; done
done
{
  echo "point,platform.node.nic.bandwidth,workload.global_batch,runs,runs_completed$metrics"
  point=0
  for batch in 512 1024; do
    for bw in 25Gbps 100Gbps 400Gbps 1.6Tbps; do
      awk -v p=$point -v bw=$bw -v batch=$batch 'BEGIN {
        g = bw + 0; if (bw ~ /Tbps/) g *= 1000
        t = 0.3 * batch / 512 + 20 / g
        printf "%d,%s,%d,4,4", p, bw, batch
        for (k = 1; k <= 10; k *= 10)
          printf ",%g,%g,%g,%g,%g,%g,%g,%g", 1.05*t*k, 0.02*t*k, 0.98*t*k, 1.03*t*k, 1.08*t*k, 1.1*t*k, 1.18*t*k, 1.25*t*k
        printf "\n"
      }'
      point=$((point + 1))
    done
  done
} >"$tmp/sweep.csv"
head -1 "$tmp/sweep.csv" >"$tmp/categories.csv"
sed -n '2,4p' "$tmp/sweep.csv" | sed 's/,25Gbps,/,ring,/; s/,100Gbps,/,tree,/; s/,400Gbps,/,"nvls, coarse",/' \
  >>"$tmp/categories.csv"

# A calibration report, as prismsim calibrate --plots writes it: a fit with three families, a
# constant sample (no families: not drawn) and the per-GPU factors. K = 4 probabilities.
fit() {  # fit CHOSEN FAMILIES : a FIT object
  echo "{\"samples\":200,\"p50\":1.01,\"p95\":1.05,\"p99\":1.08,\"max\":1.1,\"chosen\":\"$1\",
    \"distribution\":\"{lognormal: {median: 1.01, sigma: 0.03}}\",\"ks\":0.02,\"families\":[$2],
    \"probabilities\":[0.125,0.375,0.625,0.875],\"quantiles\":[0.98,1.0,1.02,1.06]}"
}
family() {  # family NAME KS Q1,Q2,Q3,Q4
  echo "{\"family\":\"$1\",\"distribution\":\"{$1: {}}\",\"ks\":$2,\"log_likelihood\":300,\"quantiles\":[$3]}"
}
three="$(family normal 0.08 0.97,1.0,1.03,1.05),$(family lognormal 0.02 0.98,1.0,1.02,1.05)"
three="$three,$(family gamma 0.03 0.98,1.0,1.02,1.06)"
mkdir -p "$tmp/calibration"
cat >"$tmp/calibration/calibration.json" <<JSON
{"inputs": [{"path": "trace.json", "format": "kineto", "samples": 400, "ignored": 3, "zero_length": 0}],
 "entries": [{"entry": "kernels.gemm", "signatures": 15, "fit": $(fit lognormal "$three")},
             {"entry": "kernels.copy", "signatures": 1, "fit": $(fit constant "")}],
 "spatial": {"gpus": 8, "nodes": 1, "node_sigma": 0, "skipped": "", "per_gpu": $(fit gamma "$three"),
             "outliers": [{"kind": "gpu", "id": "rank 3", "slowdown": 1.2, "z": 4.1}],
             "gpu_factors": {"rank 0": 1.01, "rank 3": 1.2}},
 "signatures": [{"kind": "kernel", "signature": "sm90_gemm", "class": "gemm", "samples": 200,
                 "bubble_waits": 0, "nominal_s": 0.001, "entry": "kernels.gemm", "skipped": "",
                 "fit": null}]}
JSON
# kernels.gemm's fit with 3 sample quantiles for 4 probabilities
sed '0,/"quantiles":\[0.98,1.0,1.02,1.06\]}/s//"quantiles":[0.98,1.0,1.02]}/' \
  "$tmp/calibration/calibration.json" >"$tmp/mismatch.json"
sed 's/"entries"/"fits"/' "$tmp/calibration/calibration.json" >"$tmp/no-entries.json"
echo '{"entries": [' >"$tmp/invalid.json"
echo "{\"entries\": [{\"entry\": \"kernels.copy\", \"signatures\": 1, \"fit\": $(fit constant "")}]}" \
  >"$tmp/constant.json"

# cdf
expect "cdf" 0 plot cdf "$tmp/a"
png "cdf writes OUTDIR/cdf.png" "$tmp/a/cdf.png"
same "cdf prints the path" "$tmp/a/cdf.png" "$(cat "$tmp/out")"
expect "cdf -o" 0 plot cdf "$tmp/a" -o "$tmp/again.png"
png "cdf -o writes there" "$tmp/again.png"
same "same inputs, same PNG" "" "$(cmp "$tmp/a/cdf.png" "$tmp/again.png" 2>&1)"

# compare
expect "compare" 0 plot compare "$tmp/a" "$tmp/b" --labels fast slow
png "compare writes DIR_A/compare.png" "$tmp/a/compare.png"
same "compare prints the path" "$tmp/a/compare.png" "$(cat "$tmp/out")"

# sweep
expect "sweep" 0 plot sweep "$tmp/sweep.csv" --x platform.node.nic.bandwidth \
  --series workload.global_batch --log-x
png "sweep writes sweep-step_time.png next to the CSV" "$tmp/sweep-step_time.png"
same "sweep prints the path" "$tmp/sweep-step_time.png" "$(cat "$tmp/out")"
expect "sweep job time, categories" 0 plot sweep "$tmp/categories.csv" \
  --x platform.node.nic.bandwidth --metric job_time -o "$tmp/categories.png"
png "sweep -o writes there" "$tmp/categories.png"

# How sweeps are drawn (plot.py's sweep_layout): categories as points and bars, numbers as
# lines, a log axis for a range over 1.5 decades, the no-variation baseline, the study's name.
layout() {  # layout CSV EXPRESSION ARGS... : EXPRESSION of the layout `l` of `plot.py sweep CSV ARGS`
  local csv=$1 expression=$2
  shift 2
  "$python" - "$script" "$csv" "$expression" "$@" 2>/dev/null <<'EOF'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("plot", sys.argv[1])
plot = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plot)
args = plot.parse_args(["sweep", sys.argv[2]] + sys.argv[4:])
columns = [f"{args.metric}_{s}_s" for s in plot.STATS]
header, rows = plot.read_csv(args.csv, [args.x] + columns, "sweep file")
l = plot.sweep_layout(args, header, rows)
print(eval(sys.argv[3]))
EOF
}
bw=platform.node.nic.bandwidth
same "bandwidths are numbers" numeric "$(layout "$tmp/sweep.csv" "l['kind']" --x $bw)"
same "25Gbps to 1.6Tbps (1.8 decades): log x" log "$(layout "$tmp/sweep.csv" "l['x_scale']" --x $bw)"
same "--x-scale linear forces it" linear \
  "$(layout "$tmp/sweep.csv" "l['x_scale']" --x $bw --x-scale linear)"
same "--log-x still forces log" log \
  "$(layout "$tmp/sweep.csv" "l['x_scale']" --x workload.global_batch --log-x)"
same "512 to 1024 (0.3 decades): linear x" linear \
  "$(layout "$tmp/sweep.csv" "l['x_scale']" --x workload.global_batch)"
same "algorithms are categories" categorical "$(layout "$tmp/categories.csv" "l['kind']" --x $bw)"
same "categories in order of appearance" "ring|tree|nvls, coarse" \
  "$(layout "$tmp/categories.csv" "'|'.join(l['categories'])" --x $bw)"
same "no baseline column, no baseline" None "$(layout "$tmp/sweep.csv" "l['baseline']" --x $bw)"
# The same sweep with a baseline column: one for every point, then one varying with the point.
for kind in constant varying; do
  awk -F, -v kind=$kind 'NR == 1 { print $0 ",baseline_step_time_s,slowdown_p50,slowdown_p95,slowdown_p99"; next }
    { b = kind == "constant" ? 0.25 : 0.25 + 0.01 * $1; printf "%s,%g,1,1,1\n", $0, b }' \
    "$tmp/sweep.csv" >"$tmp/baseline-$kind.csv"
done
same "one baseline for every point: a horizontal line" "constant 0.25" \
  "$(layout "$tmp/baseline-constant.csv" "l['baseline'] + ' ' + str(l['baseline_value'])" --x $bw)"
same "a baseline per point" per_point "$(layout "$tmp/baseline-varying.csv" "l['baseline']" --x $bw)"
same "job time: no baseline (the table has the step time's)" None \
  "$(layout "$tmp/baseline-constant.csv" "l['baseline']" --x $bw --metric job_time)"
same "title without sweep.json: no file name" "step time against $bw" \
  "$(layout "$tmp/sweep.csv" "l['title']" --x $bw)"
mkdir -p "$tmp/study"
cp "$tmp/baseline-varying.csv" "$tmp/study/sweep.csv"
head -1 "$tmp/categories.csv" | sed 's/$/,baseline_step_time_s,slowdown_p50,slowdown_p95,slowdown_p99/' \
  >"$tmp/study/categories.csv"
tail -n +2 "$tmp/categories.csv" | sed 's/$/,0.2,1,1,1/' >>"$tmp/study/categories.csv"
echo '{"name": "fabric-choice", "points": []}' >"$tmp/study/sweep.json"
same "title from the study's name" "fabric-choice: step time against $bw" \
  "$(layout "$tmp/study/sweep.csv" "l['title']" --x $bw)"
expect "sweep with a baseline per point" 0 plot sweep "$tmp/study/sweep.csv" --x $bw \
  --series workload.global_batch
png "sweep with a baseline per point draws" "$tmp/study/sweep-step_time.png"
expect "categories with a constant baseline" 0 plot sweep "$tmp/study/categories.csv" --x $bw \
  -o "$tmp/study/categories.png"
png "categories with a baseline draw" "$tmp/study/categories.png"
expect "log x on categories" 0 plot sweep "$tmp/categories.csv" --x $bw --x-scale log \
  -o "$tmp/categories-log.png"
same "log x on categories: a warning" 1 "$(grep -c "holds categories, not numbers" "$tmp/err")"

# calibration
cal=$tmp/calibration
expect "calibration" 0 plot calibration "$cal/calibration.json"
png "calibration draws a fitted entry" "$cal/calibration-kernels-gemm.png"
png "calibration draws the per-GPU fit" "$cal/calibration-gpus-per_gpu.png"
same "calibration leaves out a constant sample" "" "$(ls "$cal" | grep copy)"
same "calibration prints the paths" "$cal/calibration-kernels-gemm.png
$cal/calibration-gpus-per_gpu.png" "$(cat "$tmp/out")"
same "calibration warns of the constant sample" 1 "$(grep -c 'warning: .*kernels.copy' "$tmp/err")"
expect "calibration --out" 0 plot calibration "$cal/calibration.json" --out "$tmp/cal-plots"
png "calibration --out writes there" "$tmp/cal-plots/calibration-kernels-gemm.png"
same "calibration --out prints the paths" 2 "$(grep -c "^$tmp/cal-plots/calibration-" "$tmp/out")"
expect "calibration: nothing to draw" 0 plot calibration "$tmp/constant.json" --out "$tmp/nothing"
same "calibration: nothing to draw, nothing written" "" "$(cat "$tmp/out"; ls "$tmp/nothing" 2>/dev/null)"
same "calibration: nothing to draw, a warning" 1 "$(grep -c 'warning: nothing to draw' "$tmp/err")"

# Bad input: exit 2 and a message, never a traceback.
mkdir -p "$tmp/empty" "$tmp/header-only" "$tmp/no-runs"
: >"$tmp/empty/runs.csv"
echo "run,seed,step,step_time_s" >"$tmp/header-only/runs.csv"
: >"$tmp/empty.csv"
refused "cdf: missing directory" cdf "$tmp/no-such-dir"
refused "cdf: no runs.csv" cdf "$tmp/no-runs"
refused "cdf: empty runs.csv" cdf "$tmp/empty"
refused "cdf: runs.csv without rows" cdf "$tmp/header-only"
refused "compare: missing directory" compare "$tmp/a" "$tmp/no-such-dir"
refused "sweep: missing file" sweep "$tmp/no-such.csv" --x platform.node.nic.bandwidth
refused "sweep: empty file" sweep "$tmp/empty.csv" --x platform.node.nic.bandwidth
refused "sweep: missing column" sweep "$tmp/sweep.csv" --x no.such.setting
same "missing column named" 1 "$(grep -c "no column 'no.such.setting'" "$tmp/err")"
refused "sweep: missing series column" sweep "$tmp/sweep.csv" --x platform.node.nic.bandwidth \
  --series no.such.setting
refused "sweep: no --x" sweep "$tmp/sweep.csv"
refused "calibration: missing file" calibration "$tmp/no-such.json"
refused "calibration: invalid JSON" calibration "$tmp/invalid.json"
same "invalid JSON: the file named" 1 "$(grep -c "'$tmp/invalid.json' is not valid JSON" "$tmp/err")"
refused "calibration: no entries" calibration "$tmp/no-entries.json"
refused "calibration: quantile lengths differ" calibration "$tmp/mismatch.json"
same "length mismatch: the entry named" 1 "$(grep -c "entry 'kernels.gemm'.*3 quantiles for 4" "$tmp/err")"

echo "plot.py: $passed passed, $failed failed ($python)"
[ "$failed" -eq 0 ]
