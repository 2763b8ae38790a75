#!/usr/bin/env bash
# Traces of every bundled scenario, checked as Perfetto and PyTorch-profiler tools read them
# (check_trace.py): a Chrome trace and Kineto traces of a few ranks, one step of one run. Also
# checks that the checker rejects what it must (partial overlaps, ids from 0, missing fields).
# usage: run.sh PRISMSIM   (from the repository root)
set -u
prismsim=$1
here=$(dirname "$0")
checker="python3 $here/check_trace.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$here/../cli/checks.sh"

# The checker itself: a good trace passes, each broken one fails with its reason.
cat >"$tmp/good.json" <<'JSON'
{"displayTimeUnit":"ms","traceEvents":[
{"ph":"M","name":"process_name","pid":1,"args":{"name":"rank 0"}},
{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"compute"}},
{"ph":"X","name":"a","cat":"c","pid":1,"tid":1,"ts":0.000,"dur":2.001},
{"ph":"X","name":"b","cat":"c","pid":1,"tid":1,"ts":0.500,"dur":1.501},
{"ph":"X","name":"c","cat":"c","pid":1,"tid":1,"ts":2.001,"dur":1.000}]}
JSON
expect "checker: a good trace" 0 $checker chrome "$tmp/good.json"
broken() {  # broken NAME SED-EXPRESSION EXPECTED-MESSAGE-PART
  sed "$2" "$tmp/good.json" >"$tmp/bad.json"
  expect "checker: $1" 1 $checker chrome "$tmp/bad.json"
  same "checker: $1: reason" 1 "$(grep -c -- "$3" "$tmp/out" | tr -d '\n' | sed 's/^[1-9][0-9]*$/1/')"
}
broken "partial overlap" 's/"ts":2.001,"dur":1.000/"ts":2.000,"dur":1.000/' "overlaps 'b' .* partly"
broken "pid 0" 's/"pid":1,"tid":1,"ts":0.000/"pid":0,"tid":1,"ts":0.000/' '"pid" must be an integer from 1'
broken "tid 0" 's/"tid":1,"ts":0.500/"tid":0,"ts":0.500/' '"tid" must be an integer from 1'
broken "off the ns grid" 's/"dur":1.501/"dur":1.5015/' '"dur" must be'
broken "unnamed thread" '/thread_name/d' 'no thread_name'
broken "no name" 's/"name":"b",//' '"name" must be'

# Every bundled scenario: one run, one step, a few ranks (the first two and the last two, so
# that traces hold ranks of several groups).
for scenario in workloads/scenarios/*.yaml; do
  name=$(basename "$scenario" .yaml)
  expect "$name: check" 0 "$prismsim" check "$scenario"
  gpus=$(sed -n 's/.*: ok: scenario .* (\([0-9]*\) GPUs of .*/\1/p' "$tmp/out")
  ranks="0-1"
  if [ -n "$gpus" ] && [ "$gpus" -gt 3 ]; then ranks="0-1,$((gpus - 2))-$((gpus - 1))"; fi
  args=(--runs 1 --set simulation.steps=1 --trace-ranks "$ranks" --jobs 1)
  grep -q '^ *train:' "$scenario" && args+=(--set simulation.train.replications=1)
  expect "$name: chrome trace" 0 "$prismsim" run "$scenario" --out "$tmp/$name" \
    --trace "$tmp/$name.json" "${args[@]}"
  expect "$name: chrome trace passes" 0 $checker chrome "$tmp/$name.json"
  sed 's/^/    /' "$tmp/out" | head -20
  expect "$name: kineto trace" 0 "$prismsim" run "$scenario" --out "$tmp/$name-k" \
    --trace "$tmp/$name-kineto" --trace-format kineto "${args[@]}"
  expect "$name: kineto trace passes" 0 $checker kineto "$tmp/$name-kineto"
  sed 's/^/    /' "$tmp/out" | head -20
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
