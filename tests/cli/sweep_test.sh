#!/usr/bin/env bash
# prismsim sweep: the table's rows and columns, common random numbers, determinism whatever
# --jobs, bad sweep files, interruption and a failed point. Sweep files: tests/cli/sweep/.
# usage: sweep_test.sh PRISMSIM   (from the repository root)
set -u
prismsim=$1
here=tests/cli/sweep
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/checks.sh"
column() {  # column CSV NAME : the values of column NAME, one a line (a quoted cell reads "q")
  sed 's/"[^"]*"/q/g' "$1" |
    awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next } { print $c }'
}
cell() {  # cell CSV POINT NAME
  column "$1" "$3" | sed -n "$(($2 + 1))p"
}

metrics=""
for m in step_time job_time; do
  for s in mean std min p50 p90 p95 p99 max; do metrics="$metrics,${m}_${s}_s"; done
done
tail_columns="runs,runs_completed$metrics,baseline_step_time_s,slowdown_p50,slowdown_p95,slowdown_p99"

expect "help names sweep" 0 "$prismsim" --help
same "usage line" 1 "$(grep -c '^       prismsim sweep SWEEP.yaml' "$tmp/out")"
expect "sweep help" 0 "$prismsim" sweep --help
same "sweep usage" 1 "$(grep -c '^usage: prismsim sweep SWEEP.yaml' "$tmp/out")"
expect "no sweep file" 2 "$prismsim" sweep
same "no sweep file message" "prismsim: error: missing sweep file" "$(head -1 "$tmp/err")"

# Cartesian: 2 x 2 points in order, the first parameter varying slowest; the same table for
# --jobs 1 and --jobs 3.
expect "cartesian, 3 jobs" 0 "$prismsim" sweep "$here/cartesian.yaml" --out "$tmp/c3" --jobs 3
same "no progress line when stderr is not a terminal" "" "$(cat "$tmp/err")"
csv=$tmp/c3/sweep.csv
same "header" "point,simulation.steps,variability.slow_nodes.0.slowdown,$tail_columns" \
  "$(head -1 "$csv")"
same "one row per point" 5 "$(wc -l <"$csv")"
same "points in order" "0 1 2 3" "$(column "$csv" point | tr '\n' ' ' | sed 's/ $//')"
same "first parameter slowest" "1 1 2 2" "$(column "$csv" simulation.steps | tr '\n' ' ' | sed 's/ $//')"
same "last parameter fastest" "1 2 1 2" \
  "$(column "$csv" variability.slow_nodes.0.slowdown | tr '\n' ' ' | sed 's/ $//')"
same "every run completed" "3 3 3 3" "$(column "$csv" runs_completed | tr '\n' ' ' | sed 's/ $//')"
same "summary line per point" 4 "$(grep -c '^00[0-3]  ' "$tmp/out")"
cp "$tmp/out" "$tmp/c3.out"
same "summary names the files" 1 "$(grep -c "^wrote $tmp/c3/sweep.csv, $tmp/c3/sweep.json" "$tmp/out")"
for p in 000 001 002 003; do
  same "point $p has its outputs" "runs.csv summary.json" "$(ls "$tmp/c3/points/$p" | tr '\n' ' ' | sed 's/ $//')"
done
same "a point's values reach its summary" 2 "$(json_get "$tmp/c3/points/002/summary.json" "d['steps']")"
same "a point's table row is its summary" "$(cell "$csv" 3 step_time_p50_s)" \
  "$(json_get "$tmp/c3/points/003/summary.json" "d['step_time_s']['p50']")"
# Two steps take twice as long as one; a slow node twice as slow raises the median step (by
# about 11%: tiny-gpt's step is mostly communication).
same "job time doubles with the steps" 1 "$(awk -v a="$(cell "$csv" 0 job_time_mean_s)" \
  -v b="$(cell "$csv" 2 job_time_mean_s)" 'BEGIN { r = b / a; print (r > 1.95 && r < 2.05) }')"
same "a slower node raises p50" 1 "$(awk -v a="$(cell "$csv" 0 step_time_p50_s)" \
  -v b="$(cell "$csv" 1 step_time_p50_s)" 'BEGIN { print (b > 1.05 * a) }')"
same "baseline and slowdown with variation" 1 "$(awk -v b="$(cell "$csv" 1 baseline_step_time_s)" \
  -v p="$(cell "$csv" 1 step_time_p50_s)" -v s="$(cell "$csv" 1 slowdown_p50)" \
  'BEGIN { print (b > 0 && s > 1.05 && (p / b - s) < 1e-12 && (s - p / b) < 1e-12) }')"
expect "sweep refused under --max-memory" 2 "$prismsim" sweep "$here/cartesian.yaml" \
  --max-memory 1MiB --out "$tmp/refused"
same "sweep refusal message" 1 "$(grep -c '^prismsim: error: refusing to run: expected [0-9]* MiB peak memory, .*but --max-memory is 1 MiB; .*--force' "$tmp/err")"
same "refused sweep wrote nothing" 0 "$(ls "$tmp/refused" 2>/dev/null | wc -l)"
expect "refused sweep shard" 2 "$prismsim" sweep "$here/cartesian.yaml" --shard 1/2 \
  --max-memory 1MiB --out "$tmp/refused"
expect "cartesian, 1 job" 0 "$prismsim" sweep "$here/cartesian.yaml" --out "$tmp/c1" --jobs 1
same "sweep.csv identical for any --jobs" "" "$(cmp "$tmp/c1/sweep.csv" "$tmp/c3/sweep.csv" 2>&1)"
same "sweep.json identical for any --jobs" "" "$(cmp "$tmp/c1/sweep.json" "$tmp/c3/sweep.json" 2>&1)"
same "points identical for any --jobs (but summary.json's command)" "" \
  "$(diff -r -x summary.json "$tmp/c1/points" "$tmp/c3/points" 2>&1)"
for p in 000 001 002 003; do
  same_bytes "point $p summary.json identical for any --jobs" \
    "$tmp/c1/points/$p/summary.json" "$tmp/c3/points/$p/summary.json"
done
same "a point's provenance: the sweep's command, the point's overrides" \
  "[\"prismsim\", \"sweep\", \"$here/cartesian.yaml\"]" \
  "$(json_get "$tmp/c1/points/000/summary.json" "d['provenance']['command']")"
same "point 1's overrides: the sweep's set, then its grid values" \
  '["simulation.runs=3", "variability=tests/cli/sweep/variability.yaml", "simulation.steps=1", "variability.slow_nodes.0.slowdown=2"]' \
  "$(json_get "$tmp/c1/points/001/summary.json" "d['provenance']['overrides']")"
same "point 1's inputs: the scenario's files and the sweep's variability file" \
  '["workloads/scenarios/tiny-gpt-h100.yaml", "platforms/h100-ndr.yaml", "workloads/tiny-gpt.yaml", "tests/cli/sweep/variability.yaml"]' \
  "$(json_get "$tmp/c1/points/001/summary.json" "[f['path'] for f in d['provenance']['inputs']]")"
same "stdout identical but for the paths" "$(sed "s|$tmp/c3|OUT|g" "$tmp/c3.out")" \
  "$(sed "s|$tmp/c1|OUT|g" "$tmp/out")"
if command -v python3 >/dev/null 2>&1; then
  same "sweep.json is JSON with every point" 4 \
    "$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["points"]))' "$tmp/c3/sweep.json")"
fi

# Zip: one point per position; variants labelled by name (CSV-quoted); --runs applies to every
# point after the file's set. Points 0 and 1 have the same settings: common random numbers give
# them the same statistics.
expect "zip" 0 "$prismsim" sweep "$here/zip.yaml" --out "$tmp/z" --runs 2 --jobs 2
csv=$tmp/z/sweep.csv
same "zip header" "point,variability.slow_nodes.0.slowdown,layout,$tail_columns" "$(head -1 "$csv")"
same "zip rows" 4 "$(wc -l <"$csv")"
same "variant quoted" 1 "$(grep -c '^2,2,"pipeline, outermost",2,2,' "$csv")"
same "--runs reaches every point" "2 2 2" "$(column "$csv" runs | tr '\n' ' ' | sed 's/ $//')"
same "same settings, same statistics" "$(sed -n 2p "$csv" | cut -d, -f4-)" "$(sed -n 3p "$csv" | cut -d, -f4-)"
same "same settings, same runs" "" "$(cmp "$tmp/z/points/000/runs.csv" "$tmp/z/points/001/runs.csv" 2>&1)"
same "variants in sweep.json" \
  '{"default": [], "again": [], "pipeline, outermost": ["parallelism.order=[tp, cp, dp, pp]"]}' \
  "$(json_get "$tmp/z/sweep.json" "next(p['variants'] for p in d['parameters'] if 'variants' in p)")"
same "--runs recorded in sweep.json" \
  '["simulation.runs=3", "variability=variability.yaml", "simulation.runs=2"]' \
  "$(json_get "$tmp/z/sweep.json" "d['set']")"
# Without variation: no baseline, empty cells.
cat >"$tmp/plain.yaml" <<EOF
scenario: $PWD/workloads/scenarios/tiny-gpt-h100.yaml
parameters: [{path: simulation.steps, values: [1, 2]}]
EOF
expect "no variation" 0 "$prismsim" sweep "$tmp/plain.yaml" --out "$tmp/n" --runs 1 --jobs 2
same "default name: the file's stem" 1 "$(grep -c '^sweep plain: 2 points (cartesian) of ' "$tmp/out")"
same "no-variation cells empty" ",,,," "$(sed -n 2p "$tmp/n/sweep.csv" | grep -o ',,,,$')"

# Bad sweep files: exit 2, located messages, nothing simulated.
expect "unknown key" 2 "$prismsim" sweep "$here/bad-key.yaml" --out "$tmp/bad1"
same "unknown key message" \
  "$here/bad-key.yaml:3:1: error: unknown key 'grids' (did you mean 'grid'?)" "$(cat "$tmp/err")"
same "unknown key: nothing written" "" "$(cat "$tmp/out"; ls "$tmp/bad1" 2>/dev/null)"
expect "zip of unequal lengths" 2 "$prismsim" sweep "$here/bad-zip.yaml" --out "$tmp/bad2"
same "zip message" "$here/bad-zip.yaml:7:5: error: grid 'zip' needs the same number of values in every parameter: 'simulation.steps' has 2, 'simulation.runs' has 3" \
  "$(cat "$tmp/err")"
expect "values the scenario refuses" 2 "$prismsim" sweep "$here/bad-value.yaml" --out "$tmp/bad3"
same "bad value messages" "workloads/scenarios/tiny-gpt-h100.yaml:5:14: error: in point 1 (parallelism.tp=3): parallel degrees dp 4 x tp 3 x pp 2 x cp 1 = 24 do not match 'parallelism.gpus' 16
workloads/scenarios/tiny-gpt-h100.yaml:5:14: error: in point 1 (parallelism.tp=3): model heads 8 is not a multiple of tp 3
workloads/scenarios/tiny-gpt-h100.yaml:5:14: error: in point 1 (parallelism.tp=3): model kv_heads 8 is not a multiple of tp 3
workloads/scenarios/tiny-gpt-h100.yaml:5:14: error: in point 1 (parallelism.tp=3): model ffn 1024 is not a multiple of tp 3
$here/bad-value.yaml:5:20: error: in point 2 (parallelism.tp=0): 'parallelism.tp' must be at least 1, got 0" \
  "$(cat "$tmp/err")"
same "bad value: nothing simulated" "" "$(cat "$tmp/out"; ls "$tmp/bad3" 2>/dev/null)"
expect "bad --set" 2 "$prismsim" sweep "$here/cartesian.yaml" --out "$tmp/bad4" --set foo=1
same "a problem of every point is reported once, unprefixed" "--set:1:1: error: unknown key 'foo'" \
  "$(cat "$tmp/err")"
cat >"$tmp/types.yaml" <<EOF
scenario: no-such-scenario.yaml
set: "simulation.runs=2"
parameters:
  - {path: simulation.steps, name: steps}
  - name: layout
    variants: {a: "parallelism.dp=4", b: [dp]}
EOF
expect "wrong types" 2 "$prismsim" sweep "$tmp/types.yaml" --out "$tmp/bad5"
same "wrong types messages" "$tmp/types.yaml:1:11: error: cannot read scenario '$tmp/no-such-scenario.yaml': No such file or directory
$tmp/types.yaml:2:6: error: 'set' must be a list, got a single value
$tmp/types.yaml:4:5: error: 'parameters.0' has both 'path' and 'name': give 'path' with 'values', or 'name' with 'variants'
$tmp/types.yaml:6:19: error: 'parameters.1.variants.a' must be a list of PATH=VALUE strings, got a single value
$tmp/types.yaml:6:43: error: 'parameters.1.variants.b.0' must be PATH=VALUE, got 'dp'" "$(cat "$tmp/err")"
expect "unwritable output" 2 "$prismsim" sweep "$here/cartesian.yaml" --out /proc/prismsim-sweep
same "unwritable output message" "prismsim: error: cannot write to output directory '/proc/prismsim-sweep'" \
  "$(head -1 "$tmp/err")"

# A point whose process dies: its row shows no completed run, exit 1, the table is written.
"$prismsim" sweep "$here/long.yaml" --out "$tmp/fail" --jobs 1 >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 50); do
  child=$(children_of "$pid" | head -1)
  [ -n "$child" ] && break
  sleep 0.1
done
sleep 0.5
[ -n "$child" ] && kill -KILL "$child"
wait "$pid"
same "failed point exit code" 1 "$?"
same "failed point row" "0,1000,1000,0,,,,,,,,,,,,,,,,,,,," "$(sed -n 2p "$tmp/fail/sweep.csv")"
same "the other point ran" "1,1,1,1," "$(sed -n 3p "$tmp/fail/sweep.csv" | cut -d, -f1-4),"
same "failed point message" "prismsim: error: point 0 (simulation.runs=1000): 0 of 1000 runs completed; its process was killed by signal 9 (Killed)
prismsim: error: 1 of 2 points did not complete every run; their rows show it" "$(cat "$tmp/err")"
same "no process left after a failed point" "" "$(processes_of "$tmp/fail")"

# Ctrl-C: exit 130, the table holds the points that finished, no process is left.
"$prismsim" sweep "$here/long.yaml" --out "$tmp/int" --jobs 2 >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 300); do  # until the short point has written its outputs
  [ -s "$tmp/int/points/001/runs.csv" ] && break
  sleep 0.1
done
sleep 0.5
kill -INT "$pid"
wait "$pid"
same "interrupted exit code" 130 "$?"
same "interrupted message" "prismsim: interrupted by SIGINT: 1 of 2 points finished; the table holds them" \
  "$(cat "$tmp/err")"
same "interrupted table: the finished point only" "1,1,1,1," "$(sed -n '2,$p' "$tmp/int/sweep.csv" | cut -d, -f1-4),"
same "interrupted sweep.json" 2 "$(json_get "$tmp/int/sweep.json" "d['points_total']")"
left=""
for _ in $(seq 20); do
  left=$(processes_of "$tmp/int")
  [ -z "$left" ] && break
  sleep 0.1
done
same "no process left after Ctrl-C" "" "$left"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
