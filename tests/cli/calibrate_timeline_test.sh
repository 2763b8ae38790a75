#!/usr/bin/env bash
# prismsim calibrate on op timelines: a small timeline's levels and report, and its bad input.
set -uo pipefail
prismsim=$1
data=tests/cli/calibrate
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
expect() {  # NAME CODE COMMAND...
  local name=$1 code=$2; shift 2
  "$@" > "$tmp/out" 2> "$tmp/err"; local got=$?
  if [ "$got" -eq "$code" ]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL $name: exit $got, expected $code"; cat "$tmp/err"; fi
}
same() {  # NAME EXPECTED ACTUAL
  if [ "$2" == "$3" ]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL $1:"; echo "  expected: $2"; echo "  actual:   $3"; fi
}

# A timeline of 2 replicas x 2 stages x 3 steps x 4 microbatches: every pass the same length,
# so no level shows variation and nothing is fitted; constant collective transfers: no jitter.
{
  echo "dp_rank,stage,rank,step,optype,start_ts,duration,seq_id,mc,mb_id,gmc"
  for step in 1 2 3; do
    for replica in 0 1; do
      for stage in 0 1; do
        rank=$((replica * 2 + stage)); t=0
        for mb in 0 1 2 3; do
          echo "$replica,$stage,$rank,$step,forward-compute,$t.0,0.5,$mb,0,$mb,0"; t=$((t + 1))
          echo "$replica,$stage,$rank,$step,backward-compute,$t.0,0.75,$mb,0,$mb,0"; t=$((t + 1))
        done
        echo "$replica,$stage,$rank,$step,grads-reduce-scatter,$((t + replica)).0,$((1 - replica)).25,0,-1,-1,-1"
      done
    done
  done
} > "$tmp/flat.csv"
expect "calibrate a timeline" 0 "$prismsim" calibrate "$tmp/flat.csv" --out "$tmp/flat.yaml" \
  --report "$tmp/flat.json"
same "no level fitted" 0 "$(grep -c "^  \(step\|gpu_step\|microbatch\|forward_pass\|backward_pass\|per_gpu\): {" "$tmp/flat.yaml")"
same "no jitter fitted" 0 "$(grep -c '^network:' "$tmp/flat.yaml")"
same "transfer apart from waiting (end - last start)" "0.25" \
  "$(python3 -c "import json; print(json.load(open('$tmp/flat.json'))['collectives'][0]['transfer_p50_s'])")"
same "report says why" True \
  "$(python3 -c "import json; print('no jitter shown' in json.load(open('$tmp/flat.json'))['collectives'][0]['reason'])")"
expect "the section loads" 0 "$prismsim" check workloads/scenarios/tiny-gpt-h100.yaml \
  --set "variability=$tmp/flat.yaml"

# Bad input: located errors, exit 2, nothing written.
expect "negative duration" 2 "$prismsim" calibrate "$data/timeline-negative.csv" --out "$tmp/x.yaml"
same "negative duration message" \
  "$data/timeline-negative.csv:3:26: error: negative duration -0.25 s: durations are seconds >= 0" \
  "$(cat "$tmp/err")"
expect "missing column" 2 "$prismsim" calibrate "$data/timeline-missing.csv" --out "$tmp/x.yaml"
same "missing column message" \
  "$data/timeline-missing.csv:1:1: error: missing column duration: a timeline needs rank, step, optype, start_ts, duration" \
  "$(cat "$tmp/err")"
expect "out of step order" 2 "$prismsim" calibrate "$data/timeline-order.csv" --out "$tmp/x.yaml"
same "out of step order message" \
  "$data/timeline-order.csv:3:3: error: op of rank 0 in step 1 after its step 2 (line 2): ops out of step order (list each rank's steps in increasing order)" \
  "$(cat "$tmp/err")"
expect "timelines mixed with samples" 2 "$prismsim" calibrate "$tmp/flat.csv" "$data/negative.csv" \
  --out "$tmp/x.yaml"
[ ! -e "$tmp/x.yaml" ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL bad input wrote a section"; }

echo "calibrate timelines: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
