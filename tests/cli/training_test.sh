#!/usr/bin/env bash
# Whole training runs (simulation.train, resilience): outputs, determinism whatever --jobs, bad
# input found after simulating, sweeps of the whole run's parameters.
# usage: training_test.sh PRISMSIM   (from the repository root)
set -u
prismsim=$1
tiny=workloads/scenarios/tiny-gpt-h100-training.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/checks.sh"

expect "check the 405B 54-day scenario" 0 "$prismsim" check workloads/scenarios/llama3-405b-h100-training.yaml

expect "whole run" 0 "$prismsim" run "$tiny" --out "$tmp/a" --jobs 1 --set simulation.runs=2 \
  --set simulation.steps=2 --set simulation.train.replications=50
same "training.csv: one row per replication" 51 "$(wc -l <"$tmp/a/training.csv")"
same "training.csv header starts" "replication,seed,finished,wall_s,goodput,useful_s" \
  "$(head -1 "$tmp/a/training.csv" | cut -d, -f1-6)"
same "written files" 1 "$(grep -c 'training.csv$' "$tmp/out")"
same "replications in summary" '[50, 50]' \
  "$(json_get "$tmp/a/summary.json" "[d['training']['replications'], d['training']['finished']]")"
same "causes add up to the wall time" true \
  "$(json_get "$tmp/a/summary.json" "abs(sum(d['training']['fraction_by_cause'].values()) - 1) < 1e-9")"
same "three sizes of step times (full, 3 and 2 replicas)" '[4, 3, 2]' \
  "$(json_get "$tmp/a/summary.json" "[s['replicas'] for s in d['training']['step_time_model']]")"
same "the smaller sizes run fewer samples a step" true \
  "$(json_get "$tmp/a/summary.json" "d['training']['step_time_model'][2]['mean_step_s'] <= d['training']['step_time_model'][0]['mean_step_s'] * 1.01")"
same "deadlines" '[72000, 86400]' \
  "$(json_get "$tmp/a/summary.json" "[x['deadline_s'] for x in d['training']['deadlines']]")"
same "text" 1 "$(grep -c '^  goodput: mean ' "$tmp/out")"

expect "same run, two jobs" 0 "$prismsim" run "$tiny" --out "$tmp/b" --jobs 2 --set simulation.runs=2 \
  --set simulation.steps=2 --set simulation.train.replications=50
same_bytes "summary.json identical at --jobs 1 and 2" "$tmp/a/summary.json" \
  "$tmp/b/summary.json"
for file in runs.csv training.csv; do
  if cmp -s "$tmp/a/$file" "$tmp/b/$file"; then same "$file identical at --jobs 1 and 2" 0 0; else
    same "$file identical at --jobs 1 and 2" same differ; fi
done

expect "an interval shorter than a step" 2 "$prismsim" run "$tiny" --out "$tmp/c" --jobs 2 \
  --set simulation.runs=1 --set simulation.steps=1 --set resilience.checkpoint.interval=1ms
same "its message" 1 "$(grep -c "^--set:3:32: error: 'resilience.checkpoint.interval' is 0.001 s, shorter than the simulated mean step of" "$tmp/err")"

expect "until run" 0 "$prismsim" run "$tiny" --out "$tmp/u" --jobs 2 --set simulation.runs=1 \
  --set simulation.steps=1 --set 'simulation.train={until: 10h, replications: 20}'
same "until: no training time distribution, work done" '[false, true]' \
  "$(json_get "$tmp/u/summary.json" "['training_time_s' in d['training'], d['training']['work_steps']['mean'] > 0]")"

expect "sweep of interval and spares" 0 "$prismsim" sweep tests/cli/training/interval.yaml \
  --out "$tmp/s" --jobs 2
same "sweep rows" 7 "$(wc -l <"$tmp/s/sweep.csv")"
same "sweep has the training columns" 1 "$(head -1 "$tmp/s/sweep.csv" | grep -c ',training_time_p50_s,.*,goodput_mean,')"
same "sweep.json has them" true \
  "$(json_get "$tmp/s/sweep.json" "all(0 < p['training']['goodput_mean'] <= 1 for p in d['points'])")"
# Common random numbers: the same failures hit every point; a longer interval loses more work.
same "lost work grows with the interval" true \
  "$(json_get "$tmp/s/sweep.json" "[p['training']['fraction_lost_work'] for p in d['points'] if p['values']['resilience.recovery.spares'] == '4'] == sorted(p['training']['fraction_lost_work'] for p in d['points'] if p['values']['resilience.recovery.spares'] == '4')")"

# Plots, when a python3 with matplotlib is there.
python=
for candidate in ${PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c "import matplotlib" 2>/dev/null; then
    python=$candidate
    break
  fi
done
if [ -n "$python" ]; then
  expect "training plot" 0 "$python" scripts/plot.py training "$tmp/a"
  same "training plot written" "$tmp/a/training.png" "$(cat "$tmp/out")"
  expect "training plot of an until run" 0 "$python" scripts/plot.py training "$tmp/u"
  expect "goodput plot" 0 "$python" scripts/plot.py goodput "$tmp/s/sweep.csv" \
    --x resilience.checkpoint.interval --series resilience.recovery.spares -o "$tmp/g.png"
  same "goodput plot written" "$tmp/g.png" "$(cat "$tmp/out")"
  expect "no whole run to plot" 2 "$python" scripts/plot.py training "$tmp/c"
else
  echo "SKIP plots: no python3 with matplotlib"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
