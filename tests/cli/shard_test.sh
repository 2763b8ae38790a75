#!/usr/bin/env bash
# Output directories, shards and merge: an earlier study's files never mix with a new one's;
# run/sweep --shard K/N, merged, give the unsharded bytes; merge refuses what is not one study;
# a stopped shard keeps its finished runs and resumes; prismsim slurm writes and submits its jobs.
# usage: shard_test.sh PRISMSIM   (from the repository root)
set -u
prismsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/checks.sh"
tiny=workloads/scenarios/tiny-gpt-h100.yaml
variability=workloads/variability/h100-all-sources.yaml
sweep=tests/cli/sweep/cartesian.yaml
leftovers() {  # leftovers DIR: temporary files of atomic writes left anywhere under DIR
  find "$1" -name '.*.tmp-*' | head -3
}

# --- An output directory: the earlier study's files go first, never a mix of two studies.
expect "study with trace and breakdown" 0 "$prismsim" run "$tiny" --out "$tmp/o" --runs 2 \
  --set variability=$variability --trace "$tmp/o/my-trace.json" --breakdown --jobs 2
touch "$tmp/o/notes.txt"  # not prismsim's: kept
same "first study's files" "breakdown.csv my-trace.json notes.txt runs.csv summary.json" \
  "$(ls "$tmp/o" | tr '\n' ' ' | sed 's/ $//')"
expect "second study into the same directory" 0 "$prismsim" run "$tiny" --out "$tmp/o" --runs 1 --jobs 1
same "the earlier breakdown and trace are gone, other files kept" "notes.txt runs.csv summary.json" \
  "$(ls "$tmp/o" | tr '\n' ' ' | sed 's/ $//')"
same "no temporary file left" "" "$(leftovers "$tmp/o")"
expect "kineto trace with 4 ranks" 0 "$prismsim" run "$tiny" --out "$tmp/k" --runs 1 \
  --trace "$tmp/k/kineto" --trace-format kineto --trace-ranks 0-3
expect "kineto trace with 2 ranks into the same directory" 0 "$prismsim" run "$tiny" --out "$tmp/k" \
  --runs 1 --trace "$tmp/k/kineto" --trace-format kineto --trace-ranks 0-1
same "only this trace's rank files" "rank0.pt.trace.json rank1.pt.trace.json" \
  "$(ls "$tmp/k/kineto" | tr '\n' ' ' | sed 's/ $//')"
expect "sweep of 4 points" 0 "$prismsim" sweep "$sweep" --out "$tmp/sw" --jobs 2
expect "sweep of 2 points into the same directory" 0 "$prismsim" sweep "$sweep" --out "$tmp/sw" \
  --jobs 2 --set simulation.runs=2 2>/dev/null
expect "a 2-point sweep" 0 "$prismsim" sweep tests/cli/sweep/zip.yaml --out "$tmp/sw" --jobs 2
same "points of the earlier sweep are gone" "$(json_get "$tmp/sw/sweep.json" "d['points_total']")" \
  "$(ls "$tmp/sw/points" | wc -l)"

# --- Shards of a run (with variation: the baseline too, deadlines, a comparison) merge into the
# unsharded bytes, for any N, also N above the number of runs (empty shards).
printf 'run,step_time_s\n0,0.020\n1,0.022\n2,0.025\n' >"$tmp/measured.csv"
common=(--runs 7 --set variability=$variability --deadline 100ms --deadline 1.05x --compare-to "$tmp/measured.csv")
expect "unsharded run" 0 "$prismsim" run "$tiny" --out "$tmp/full" "${common[@]}" --jobs 2
for n in 3 9; do
  dirs=()
  for k in $(seq 1 $n); do
    expect "run shard $k/$n" 0 "$prismsim" run "$tiny" --out "$tmp/r$n/$k" "${common[@]}" \
      --shard $k/$n --jobs 2
    dirs+=("$tmp/r$n/$k")
  done
  # Shards given in any order.
  expect "merge $n shards" 0 "$prismsim" merge $(printf '%s\n' "${dirs[@]}" | sort -r) --out "$tmp/m$n"
  for file in summary.json runs.csv; do
    same "$n shards: merged $file is the unsharded one" "" "$(cmp "$tmp/full/$file" "$tmp/m$n/$file" 2>&1)"
  done
done
same "a shard writes only its partial result" "partial-result.txt" "$(ls "$tmp/r3/1")"
same "partial result names its shard" "$(printf 'shard\t2\t3')" "$(grep '^shard' "$tmp/r3/2/partial-result.txt")"
expect "a complete shard run again" 0 "$prismsim" run "$tiny" --out "$tmp/r3/2" "${common[@]}" --shard 2/3
same "is not simulated again" 1 "$(grep -c '^shard 2/3: already complete' "$tmp/out")"

# --- Shards of a sweep: points x runs sliced across shards.
expect "unsharded sweep" 0 "$prismsim" sweep "$sweep" --out "$tmp/swfull" --jobs 2
for k in 1 2 3 4 5; do
  expect "sweep shard $k/5" 0 "$prismsim" sweep "$sweep" --out "$tmp/sws/$k" --shard $k/5 --jobs 2
done
expect "merge the sweep" 0 "$prismsim" merge "$tmp"/sws/{1,2,3,4,5} --out "$tmp/swm"
for file in sweep.csv sweep.json points/000/summary.json points/000/runs.csv \
            points/003/summary.json points/003/runs.csv; do
  same "sweep: merged $file is the unsharded one" "" "$(cmp "$tmp/swfull/$file" "$tmp/swm/$file" 2>&1)"
done
same "sweep: the same files" "$(cd "$tmp/swfull" && find . -type f | sort)" \
  "$(cd "$tmp/swm" && find . -type f | sort)"

# --- Bad --shard values.
for bad in 0/4 5/4 a/b 1/0 2 -1/4; do
  expect "--shard $bad" 2 "$prismsim" run "$tiny" --out "$tmp/bad" --shard "$bad"
done
expect "--shard 5/4 on a sweep" 2 "$prismsim" sweep "$sweep" --out "$tmp/bad" --shard 5/4
same "--shard 5/4 message" "prismsim: error: --shard '5/4': K must be between 1 and N (4); shards are numbered from 1" \
  "$(head -1 "$tmp/err")"
expect "--shard a/b" 2 "$prismsim" run "$tiny" --out "$tmp/bad" --shard a/b
same "--shard a/b message" "prismsim: error: --shard 'a/b': expected K/N, two whole numbers, e.g. --shard 2/8 (the second of 8 shards)" \
  "$(head -1 "$tmp/err")"
expect "--shard with --breakdown" 2 "$prismsim" run "$tiny" --out "$tmp/bad" --shard 1/2 --breakdown

# --- Merge refuses what is not one whole study, naming what differs.
r=$tmp/r3
expect "missing shard" 2 "$prismsim" merge "$r/1" "$r/3" --out "$tmp/mx"
same "missing shard message" "prismsim merge: error: 1 of 3 shards missing: 2/3 (given: 2 shard files)" \
  "$(head -1 "$tmp/err")"
expect "duplicate shard" 2 "$prismsim" merge "$r/1" "$r/2" "$r/2/partial-result.txt" "$r/3" --out "$tmp/mx"
same "duplicate shard message" \
  "$r/2/partial-result.txt:$(grep -n '^shard' "$r/2/partial-result.txt" | cut -d: -f1):1: error: shard 2/3 is given twice: here and in '$r/2/partial-result.txt'" \
  "$(head -1 "$tmp/err")"
expect "other seed" 0 "$prismsim" run "$tiny" --out "$tmp/seed/2" "${common[@]}" --seed 8 --shard 2/3
expect "shards of two seeds" 2 "$prismsim" merge "$r/1" "$tmp/seed/2" "$r/3" --out "$tmp/mx"
same "seed message" 1 "$(grep -c "^$tmp/seed/2/partial-result.txt:[0-9]*:1: error: shard 2/3 is of another study: set .* here, .* in shard 1/3" "$tmp/err")"
expect "other N" 0 "$prismsim" run "$tiny" --out "$tmp/n4/2" "${common[@]}" --shard 2/4
expect "shards of two shard counts" 2 "$prismsim" merge "$r/1" "$tmp/n4/2" "$r/3" --out "$tmp/mx"
same "shard count message" 1 "$(grep -c "error: shard 2/4 is one of 4 shards, shard 1/3 of 3" "$tmp/err")"
mkdir -p "$tmp/ver/2"
sed 's/^version\t.*/version\t0.0.9/' "$r/2/partial-result.txt" >"$tmp/ver/2/partial-result.txt"
expect "shards of two versions" 2 "$prismsim" merge "$r/1" "$tmp/ver/2" "$r/3" --out "$tmp/mx"
same "version message" "$tmp/ver/2/partial-result.txt:2:1: error: shard 2/3 is of another study: version '0.0.9' here, '0.1.0' in shard 1/3 ('$r/1/partial-result.txt')" \
  "$(head -1 "$tmp/err")"
mkdir -p "$tmp/cut/2"
head -c -10 "$r/2/partial-result.txt" >"$tmp/cut/2/partial-result.txt"
expect "a truncated partial result" 2 "$prismsim" merge "$r/1" "$tmp/cut/2" "$r/3" --out "$tmp/mx"
same "truncated message" 1 "$(grep -c "^$tmp/cut/2/partial-result.txt:[0-9]*:1: error: the file ends without a line break: it was cut short" "$tmp/err")"
expect "not a partial result" 2 "$prismsim" merge "$tmp/full/summary.json" --out "$tmp/mx"
same "not a partial result message" "$tmp/full/summary.json:1:1: error: not a prismsim partial result (it should start with 'prismsim-partial-result')" \
  "$(head -1 "$tmp/err")"
cp "$variability" "$tmp/variability.yaml"
for k in 1 2; do
  expect "shard $k with a copied variability file" 0 "$prismsim" run "$tiny" --out "$tmp/ch/$k" \
    --runs 2 --set variability=$tmp/variability.yaml --shard $k/2
done
echo "# edited after the shards ran" >>"$tmp/variability.yaml"
expect "inputs changed since the shards ran" 2 "$prismsim" merge "$tmp/ch/1" "$tmp/ch/2" --out "$tmp/mx"
same "changed inputs message" 1 "$(grep -c "error: the inputs changed since the shards ran: '$PWD/$tiny' and the files it includes now give study" "$tmp/err")"
same "merge refused: nothing written" "" "$(ls "$tmp/mx" 2>/dev/null)"

# --- SIGTERM (Slurm's time limit) stops a shard: finished runs kept, no process left, exit 143;
# run again, it resumes from them, and the merge is still the unsharded study.
long=(--runs 120 --set simulation.steps=1)
expect "unsharded long run" 0 "$prismsim" run "$tiny" --out "$tmp/lfull" "${long[@]}" --jobs 2
expect "long shard 1/2" 0 "$prismsim" run "$tiny" --out "$tmp/l/1" "${long[@]}" --shard 1/2 --jobs 2
"$prismsim" run "$tiny" --out "$tmp/l/2" "${long[@]}" --shard 2/2 --jobs 2 >"$tmp/out" 2>"$tmp/err" &
pid=$!
first_child_done "$pid"
kill -TERM "$pid"
wait "$pid"
same "stopped shard: exit 143" 143 "$?"
same "stopped shard: message" 1 "$(grep -c '^prismsim: interrupted by SIGTERM: shard 2/2 kept its [0-9]* finished runs' "$tmp/err")"
same "stopped shard: no process left" "" "$(processes_of "$tmp/l/2")"
same "stopped shard: marked incomplete" "$(printf 'complete\t0')" "$(grep '^complete' "$tmp/l/2/partial-result.txt")"
kept=$(grep -c "^run$(printf '\t')" "$tmp/l/2/partial-result.txt")
same "stopped shard: some runs kept, not all" 1 "$(awk -v k="$kept" 'BEGIN { print (k >= 1 && k < 60) }')"
expect "merge refuses an incomplete shard" 2 "$prismsim" merge "$tmp/l/1" "$tmp/l/2" --out "$tmp/lm"
same "incomplete message" 1 "$(grep -c "error: shard 2/2 is incomplete: $kept of its 60 runs finished; run it again (it resumes) before merging" "$tmp/err")"
expect "resumed shard" 0 "$prismsim" run "$tiny" --out "$tmp/l/2" "${long[@]}" --shard 2/2 --jobs 2
same "resumed from the kept runs" 1 "$(grep -c "^shard 2/2: runs 60-119 of 120: 60 finished ($kept from the earlier try)" "$tmp/out")"
expect "merge after resuming" 0 "$prismsim" merge "$tmp/l/1" "$tmp/l/2" --out "$tmp/lm"
for file in summary.json runs.csv; do
  same "resumed: merged $file is the unsharded one" "" "$(cmp "$tmp/lfull/$file" "$tmp/lm/$file" 2>&1)"
done

# The same for a sweep's shard: each point's process streams its finished runs back.
swlong=(--set simulation.runs=30)
expect "unsharded sweep of 4 x 30" 0 "$prismsim" sweep "$sweep" --out "$tmp/swlfull" "${swlong[@]}" --jobs 2
expect "sweep shard 2/2" 0 "$prismsim" sweep "$sweep" --out "$tmp/swl/2" "${swlong[@]}" --shard 2/2 --jobs 2
"$prismsim" sweep "$sweep" --out "$tmp/swl/1" "${swlong[@]}" --shard 1/2 --jobs 2 >"$tmp/out" 2>"$tmp/err" &
pid=$!
point=""
for _ in $(seq 600); do
  point=$(children_of "$pid" | head -1)
  [ -n "$point" ] && break
  sleep 0.1
done
first_child_done "$point"
kill -TERM "$pid"
wait "$pid"
same "stopped sweep shard: exit 143" 143 "$?"
same "stopped sweep shard: no process left" "" "$(processes_of "$tmp/swl/1")"
kept=$(grep -c "^run$(printf '\t')" "$tmp/swl/1/partial-result.txt")
same "stopped sweep shard: some runs kept, not all" 1 "$(awk -v k="$kept" 'BEGIN { print (k >= 1 && k < 60) }')"
expect "resumed sweep shard" 0 "$prismsim" sweep "$sweep" --out "$tmp/swl/1" "${swlong[@]}" --shard 1/2 --jobs 2
same "resumed sweep shard: from the kept runs" 1 "$(grep -c "^shard 1/2: 60 of the 60 (point, run) pairs 0-59 finished ($kept from the earlier try)" "$tmp/out")"
expect "merge the resumed sweep" 0 "$prismsim" merge "$tmp/swl/1" "$tmp/swl/2" --out "$tmp/swlm"
for file in sweep.csv sweep.json points/000/runs.csv points/001/summary.json; do
  same "resumed sweep: merged $file is the unsharded one" "" "$(cmp "$tmp/swlfull/$file" "$tmp/swlm/$file" 2>&1)"
done

# --- prismsim slurm: the scripts, submitted through a stand-in sbatch that records its calls.
cat >"$tmp/sbatch" <<'EOF'
#!/bin/bash
echo "$*" >>"$(dirname "$0")/sbatch.calls"
echo $((1000 + $(wc -l <"$(dirname "$0")/sbatch.calls")))
EOF
chmod +x "$tmp/sbatch"
expect "slurm: write and submit" 0 "$prismsim" slurm "$tiny" --shards 3 --runs 7 \
  --set variability=$variability --out "$tmp/st" --time 00:10:00 --partition debug \
  --cpus-per-task 2 --account proj --submit --sbatch "$tmp/sbatch"
array=$tmp/st/slurm/shards.sbatch
for line in '#SBATCH --array=1-3' '#SBATCH --signal=B:TERM@120' '#SBATCH --time=00:10:00' \
            '#SBATCH --partition=debug' '#SBATCH --cpus-per-task=2' '#SBATCH --account=proj'; do
  same "array script: $line" 1 "$(grep -cx -- "$line" "$array")"
done
same "array script runs the shard" 1 "$(grep -c -- "run 'workloads/scenarios/tiny-gpt-h100.yaml' --set 'variability=$variability' --set 'simulation.runs=7' --shard \"\$k/3\" --out \"\$dir\" --jobs 2" "$array")"
same "submitted: the array, then the merge after it" \
  "--parsable --array=1-3 $array|--parsable --dependency=afterok:1001 --kill-on-invalid-dep=yes $tmp/st/slurm/merge.sbatch" \
  "$(paste -sd'|' "$tmp/sbatch.calls")"
# Run the array's tasks and the merge here, as Slurm would.
for k in 1 3; do
  SLURM_ARRAY_TASK_ID=$k bash "$array" >/dev/null 2>&1
done
rm "$tmp/sbatch.calls"
expect "slurm: resubmit after shards 1 and 3 finished" 0 "$prismsim" slurm "$tiny" --shards 3 \
  --runs 7 --set variability=$variability --out "$tmp/st" --submit --sbatch "$tmp/sbatch"
same "only shard 2 is submitted again" "--parsable --array=2 $array" "$(head -1 "$tmp/sbatch.calls")"
SLURM_ARRAY_TASK_ID=1 bash "$array" >"$tmp/out" 2>&1
same "the array script skips a complete shard" 1 "$(grep -c 'shard 1/3 is already complete' "$tmp/out")"
SLURM_ARRAY_TASK_ID=2 bash "$array" >/dev/null 2>&1
expect "the merge job" 0 bash "$tmp/st/slurm/merge.sbatch"
common_runs=(--runs 7 --set variability=$variability)
expect "unsharded run for slurm" 0 "$prismsim" run "$tiny" --out "$tmp/stfull" "${common_runs[@]}"
for file in summary.json runs.csv; do
  same "slurm: merged $file is the unsharded one" "" "$(cmp "$tmp/stfull/$file" "$tmp/st/$file" 2>&1)"
done
rm "$tmp/sbatch.calls"
expect "slurm: every shard complete" 0 "$prismsim" slurm "$tiny" --shards 3 --runs 7 \
  --set variability=$variability --out "$tmp/st" --submit --sbatch "$tmp/sbatch"
same "only the merge is submitted" "--parsable $tmp/st/slurm/merge.sbatch" "$(cat "$tmp/sbatch.calls")"
cp "$tmp/r3/2/partial-result.txt" "$tmp/st/shards/2/"  # complete, but of another study
SLURM_ARRAY_TASK_ID=2 bash "$array" >"$tmp/out" 2>&1
same "the array script runs a shard whose complete result is of another study" 1 \
  "$(grep -c '^shard 2/3: runs 2-3 of 7: 2 finished; wrote' "$tmp/out")"
expect "slurm: a sweep" 0 "$prismsim" slurm "$sweep" --shards 4 --out "$tmp/sts"
same "slurm: sweep shards run prismsim sweep" 1 "$(grep -c "sweep 'tests/cli/sweep/cartesian.yaml' --shard" "$tmp/sts/slurm/shards.sbatch")"
expect "slurm: no --shards" 2 "$prismsim" slurm "$tiny" --out "$tmp/sx"
expect "slurm: bad scenario" 2 "$prismsim" slurm "$tiny" --shards 2 --set parallelism.dp=0 --out "$tmp/sx"
expect "slurm: a sweep with --deadline" 2 "$prismsim" slurm "$sweep" --shards 2 --deadline 1h --out "$tmp/sx"
same "no temporary file left anywhere" "" "$(leftovers "$tmp")"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
