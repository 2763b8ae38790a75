#!/usr/bin/env bash
# The command line's contract: help and version, exit codes, overrides, determinism.
# usage: run.sh PRISMSIM   (from the repository root)
set -u
prismsim=$1
example=workloads/scenarios/dp-h100.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/checks.sh"

expect "version" 0 "$prismsim" --version
same "version text" "prismsim 0.1.0" "$(cat "$tmp/out")"
expect "help" 0 "$prismsim" --help
same "help names the commands" 1 "$(grep -c '^usage: prismsim run' "$tmp/out")"
expect "no command" 2 "$prismsim"
same "no command message" "prismsim: error: missing command" "$(head -1 "$tmp/err")"
expect "unknown command" 2 "$prismsim" simulate "$example"
same "unknown command message" "prismsim: error: unknown command 'simulate'" "$(head -1 "$tmp/err")"
expect "unknown option" 2 "$prismsim" run "$example" --rns 3
expect "bad --runs" 2 "$prismsim" run "$example" --runs 0
expect "missing scenario" 2 "$prismsim" check no-such-scenario.yaml
same "missing scenario message" \
  "no-such-scenario.yaml:1:1: error: cannot read 'no-such-scenario.yaml': No such file or directory" \
  "$(cat "$tmp/err")"
expect "unwritable output" 2 "$prismsim" run "$example" --out /proc/prismsim-out

for scenario in workloads/scenarios/*.yaml; do
  expect "check $scenario" 0 "$prismsim" check "$scenario"
done
# What a prediction rests on: a warning per uncalibrated part of the platform, on stderr. No
# bundled platform's compute is uncalibrated since dgx-b200's was fitted on its throughput rows
# and a100-ndv4 took the A100 microbenchmark fit.
b200_case=calibration/cases/throughput/bridge-llama3-8b-dgx-b200.yaml
expect "check, fitted compute" 0 "$prismsim" check "$b200_case"
same "no compute warning for dgx-b200 (fitted on its throughput rows)" 0 \
  "$(grep -c 'compute parameters are uncalibrated' "$tmp/err")"
expect "check, uncalibrated compute" 0 "$prismsim" check "$b200_case" \
  --set platform.calibration.compute=uncalibrated
same "check warns of uncalibrated compute, on stderr only" "1 0" \
  "$(grep -c '^prismsim: warning: platform dgx-b200: compute parameters are uncalibrated (' "$tmp/err") $(grep -c warning "$tmp/out")"
expect "run, uncalibrated compute" 0 "$prismsim" run "$b200_case" --out "$tmp/u" \
  --set parallelism.gpus=8 --set parallelism.tp=1 --set parallelism.pp=1 --set parallelism.dp=8 \
  --set workload.global_batch=8 --set workload.model.layers=2 \
  --set platform.calibration.compute=uncalibrated
same "run warns of uncalibrated compute on stderr" 1 \
  "$(grep -c '^prismsim: warning: platform dgx-b200: compute parameters are uncalibrated' "$tmp/err")"
expect "check, calibrated platform" 0 "$prismsim" check calibration/vtrain-gpt-a100.yaml
same "no warning for a calibrated platform" "" "$(cat "$tmp/err")"

# --runs, --seed and --set reach the scenario and the outputs.
expect "overridden run" 0 "$prismsim" run "$example" --out "$tmp/a" --runs 3 --seed 7 \
  --set simulation.steps=2 --set platform.node.nic.bandwidth=200Gbps --jobs 1
same "rows: runs x steps + header" 7 "$(wc -l <"$tmp/a/runs.csv")"
same "no progress bar when stderr is not a terminal" "" "$(grep -v '^prismsim: warning: platform ' "$tmp/err")"
same "no compute warning for h100-ndr (microbenchmark fit)" 0 \
  "$(grep -c '^prismsim: warning: platform h100-ndr: compute parameters are uncalibrated' "$tmp/err")"
same "no warning on stdout" 0 "$(grep -c 'warning' "$tmp/out")"
same "header" "run,seed,step,step_time_s" "$(head -1 "$tmp/a/runs.csv")"
same "seed recorded" 7 "$(json_get "$tmp/a/summary.json" "d['seed']")"
same "network model recorded" CM02 "$(json_get "$tmp/a/summary.json" "d['network_model']['network/model']")"

# Job time over the steps of each run, its confidence intervals, deadlines from the scenario and
# the command line.
expect "deadlines" 0 "$prismsim" run "$example" --out "$tmp/d" --runs 2 --set simulation.steps=2 \
  --set 'simulation.deadlines=[1h]' --deadline 100ms --jobs 2
same "job time counts finished runs" 2 "$(json_get "$tmp/d/summary.json" "d['job_time_s']['count']")"
same "deadlines in summary" '[[3600, 0], [0.1, 1]]' \
  "$(json_get "$tmp/d/summary.json" "[[x['deadline_s'], x['p_job_time_exceeds']] for x in d['deadlines']]")"
same "deadline in text" 1 "$(grep -c '^P(job time > 100 ms) = 1 over 2 runs' "$tmp/out")"
expect "bad deadline" 2 "$prismsim" run "$example" --out "$tmp/d2" --deadline soon

# --compare-to: KS distance and percentile errors against measured step times.
printf 'run,step_time_s\n0,0.40\n1,0.42\n2,0.45\n' >"$tmp/measured.csv"
expect "compare to measured" 0 "$prismsim" run "$example" --out "$tmp/cmp" --runs 2 \
  --compare-to "$tmp/measured.csv"
# Every simulated step takes 0.42277 s: the CDFs differ most just below it, 2/3.
same "KS distance" '[3, 0.6666666666666666]' \
  "$(json_get "$tmp/cmp/summary.json" "[d['comparison']['measured'], d['comparison']['ks_distance']]")"
printf '0.4\n-1\n' >"$tmp/bad-measured.txt"
expect "bad measured file" 2 "$prismsim" run "$example" --out "$tmp/cmp2" --compare-to "$tmp/bad-measured.txt"
same "bad measured message" "$tmp/bad-measured.txt:2:1: error: expected a positive step time in seconds, got '-1'" \
  "$(grep -v '^prismsim: warning: platform ' "$tmp/err" | head -1)"

# Stop signals (Ctrl-C, kill, timeout, Slurm's time limit, a closed terminal): exit 128 + the
# signal, the outputs hold the runs that finished, no worker is left.
for sig in INT:130 TERM:143 HUP:129; do
  name=${sig%%:*}
  "$prismsim" run "$example" --out "$tmp/int-$name" --runs 1000 --jobs 2 >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  first_child_done "$pid"
  kill -"$name" "$pid"
  wait "$pid"
  same "SIG$name exit code" "${sig##*:}" "$?"
  same "SIG$name message" 1 \
    "$(grep -c "^prismsim: interrupted by SIG$name: [0-9]* of 1000 runs finished" "$tmp/err")"
  completed=$(json_get "$tmp/int-$name/summary.json" "d['runs_completed']")
  same "SIG$name: some runs finished, not all" 1 \
    "$(awk -v c="$completed" 'BEGIN { print (c >= 1 && c < 1000) }')"
  same "SIG$name: runs.csv holds the finished runs" 1 \
    "$(awk -v c="$completed" 'END { print (NR - 1 >= c) }' "$tmp/int-$name/runs.csv")"
  same "SIG$name: no process left" "" "$(processes_of "$tmp/int-$name")"
done

# A slower NIC makes the step slower than the bundled 400 Gb/s one.
expect "default run" 0 "$prismsim" run "$example" --out "$tmp/b" --runs 3 --seed 7 \
  --set simulation.steps=2 --jobs 3
slow=$(sed -n '2p' "$tmp/a/runs.csv" | cut -d, -f4)
fast=$(sed -n '2p' "$tmp/b/runs.csv" | cut -d, -f4)
same "200 Gb/s is slower than 400 Gb/s" 1 "$(awk -v s="$slow" -v f="$fast" 'BEGIN { print (s > f) }')"

# Same inputs and seed: byte-identical outputs, whatever the number of parallel jobs.
expect "determinism run" 0 "$prismsim" run "$example" --out "$tmp/c" --runs 3 --seed 7 \
  --set simulation.steps=2 --jobs 1
same_bytes "summary.json identical" "$tmp/b/summary.json" "$tmp/c/summary.json"
same "runs.csv identical" "" "$(cmp "$tmp/b/runs.csv" "$tmp/c/runs.csv")"

# Provenance: the command line, the overrides, every file read with its SHA-256, the version and
# what the platform was calibrated on.
same "provenance: the command in canonical form (--runs and --seed as --set; no --out, --jobs)" \
  "[\"prismsim\", \"run\", \"$example\", \"--set\", \"simulation.steps=2\", \"--set\", \"simulation.runs=3\", \"--set\", \"simulation.seed=7\"]" \
  "$(json_get "$tmp/c/summary.json" "d['provenance']['command']")"
same "provenance: overrides" '["simulation.steps=2", "simulation.runs=3", "simulation.seed=7"]' \
  "$(json_get "$tmp/c/summary.json" "d['provenance']['overrides']")"
same "provenance: the scenario and the files it includes" \
  '["workloads/scenarios/dp-h100.yaml", "platforms/h100-ndr.yaml", "workloads/layer-stack-7b.yaml"]' \
  "$(json_get "$tmp/c/summary.json" "[f['path'] for f in d['provenance']['inputs']]")"
for f in $(json_get "$tmp/c/summary.json" "' '.join(f['path'] for f in d['provenance']['inputs'])"); do
  same "provenance: SHA-256 of $f" "$(sha256sum "$f" | cut -d' ' -f1)" \
    "$(json_get "$tmp/c/summary.json" "[x['sha256'] for x in d['provenance']['inputs'] if x['path'] == '$f'][0]")"
done
same "provenance: version" "0.1.0" "$(json_get "$tmp/c/summary.json" "d['provenance']['prismsim_version']")"
same "provenance: the platform's calibration (platforms/h100-ndr.yaml calibration.compute)" \
  "$(sed -n 's/^  compute: "\(.*\)"$/\1/p' platforms/h100-ndr.yaml)" \
  "$(json_get "$tmp/c/summary.json" "d['provenance']['platform_calibration']['compute']")"
cp "$example" "$tmp/edited.yaml"
sed -i 's|\.\./\.\./platforms|'"$PWD"'/platforms|; s|\.\./layer-stack|'"$PWD"'/workloads/layer-stack|' "$tmp/edited.yaml"
echo "# edited" >>"$tmp/edited.yaml"
expect "run of an edited copy" 0 "$prismsim" run "$tmp/edited.yaml" --out "$tmp/e" --runs 1 \
  --set simulation.steps=1 --jobs 1
same "provenance: an edited scenario has another hash" \
  "$(sha256sum "$tmp/edited.yaml" | cut -d' ' -f1)" \
  "$(json_get "$tmp/e/summary.json" "d['provenance']['inputs'][0]['sha256']")"

# Transformer: check reports memory; --trace writes a Chrome trace of the chosen ranks, the same
# for the same inputs.
tiny=workloads/scenarios/tiny-gpt-h100.yaml
expect "check transformer" 0 "$prismsim" check "$tiny"
same "memory per stage" 2 "$(grep -c '^memory per GPU, pipeline stage [01]: ' "$tmp/out")"
# LoRA: the adapters are what is trained (tiny-gpt: 4 layers of rank 16 x (1024 + 512 + 1280 +
# 1280) = 262,144 parameters).
expect "check LoRA" 0 "$prismsim" check "$tiny" --set workload.lora.rank=16
same "LoRA: trained parameters" 1 \
  "$(grep -c '^model: .*B parameters (0.2621M trained: LoRA adapters of rank 16), ' "$tmp/out")"
expect "trace run" 0 "$prismsim" run "$tiny" --out "$tmp/t" --trace "$tmp/t/trace.json" \
  --trace-ranks 0,5-6 --jobs 2
same "trace: one process per rank" 3 "$(grep -c '"name":"process_name"' "$tmp/t/trace.json")"
same "trace: rank 5 (process 6) has spans" 1 \
  "$(grep -q '"ph":"X".*"pid":6,' "$tmp/t/trace.json" && echo 1)"
same "trace: no other rank" "" "$(grep -o '"pid":[0-9]*' "$tmp/t/trace.json" | sort -u |
  grep -v -e '"pid":1$' -e '"pid":6$' -e '"pid":7$')"
expect "trace: passes the trace checker" 0 python3 tests/traces/check_trace.py chrome \
  "$tmp/t/trace.json"
same "trace: kernels named" 1 "$(grep -q '"name":"qkv_projection","cat":"gemm"' "$tmp/t/trace.json" && echo 1)"
same "trace: TP collectives" 1 "$(grep -q '"name":"tp all_reduce","cat":"collective"' "$tmp/t/trace.json" && echo 1)"
same "trace: closes" "]}" "$(tail -1 "$tmp/t/trace.json")"
expect "trace run again" 0 "$prismsim" run "$tiny" --out "$tmp/t2" --trace "$tmp/t2/trace.json" \
  --trace-ranks 0,5-6 --jobs 1
same "trace is deterministic" "" "$(cmp "$tmp/t/trace.json" "$tmp/t2/trace.json")"
expect "trace with TP symmetry" 0 "$prismsim" run "$tiny" --out "$tmp/t5" --trace "$tmp/t5.json" \
  --trace-ranks 0-1 --set engine.layer_collectives=analytic
same "summary names the simulated ranks" 1 "$(grep -c '^8 of 16 ranks simulated' "$tmp/out")"
same "trace: the represented rank is labelled" 1 \
  "$(grep -c '"name":"rank 1 (GPU 1, as rank 0)"' "$tmp/t5.json")"
same "trace: it has the representative's spans" \
  "$(grep -c '"ph":"X".*"pid":1,' "$tmp/t5.json")" "$(grep -c '"ph":"X".*"pid":2,' "$tmp/t5.json")"
expect "trace ranks out of range" 2 "$prismsim" run "$tiny" --out "$tmp/t3" --trace "$tmp/t3.json" \
  --trace-ranks 0-16
same "trace ranks message" "prismsim: error: --trace-ranks: rank 16 does not exist (ranks 0-15)" \
  "$(grep -v '^prismsim: warning: platform ' "$tmp/err" | head -1)"
expect "trace ranks without trace" 2 "$prismsim" run "$tiny" --trace-ranks 0
expect "unwritable trace" 2 "$prismsim" run "$tiny" --out "$tmp/t4" --trace /proc/prismsim.json
same "unwritable trace message" "prismsim: error: cannot write trace file '/proc/prismsim.json'" \
  "$(grep -v '^prismsim: warning: platform ' "$tmp/err" | head -1)"

# Variability: any --jobs gives the same bytes; the baseline is the deterministic run exactly;
# --attribute reports each source; --breakdown writes the slowest and median runs per rank.
tiny=workloads/scenarios/tiny-gpt-h100.yaml
variability=workloads/variability/h100-all-sources.yaml
expect "varied run, one job" 0 "$prismsim" run "$tiny" --out "$tmp/v1" --runs 6 --jobs 1 \
  --set variability=$variability --attribute --breakdown
same "attribution in the text summary" 1 "$(grep -c '^  thermal  *adds to step p50' "$tmp/out")"
expect "varied run, three jobs" 0 "$prismsim" run "$tiny" --out "$tmp/v3" --runs 6 --jobs 3 \
  --set variability=$variability --attribute --breakdown
same_bytes "varied summary.json is the same for any --jobs" "$tmp/v1/summary.json" \
  "$tmp/v3/summary.json"
for file in runs.csv breakdown.csv; do
  same "varied $file is byte-identical for any --jobs" "" "$(cmp "$tmp/v1/$file" "$tmp/v3/$file")"
done
same "steps differ under variation" 12 "$(tail -n +2 "$tmp/v1/runs.csv" | cut -d, -f4 | sort -u | wc -l)"
expect "deterministic run" 0 "$prismsim" run "$tiny" --out "$tmp/v0" --runs 1
same "baseline = the deterministic job time" "$(json_get "$tmp/v0/summary.json" "d['job_time_s']['mean']")" \
  "$(json_get "$tmp/v1/summary.json" "d['baseline']['job_time_s']")"
same "one attribution per source" 6 \
  "$(json_get "$tmp/v1/summary.json" "len(d['variability']['attribution'])")"
same "breakdown: header + 2 runs x 16 ranks" 33 "$(wc -l <"$tmp/v1/breakdown.csv")"
same "breakdown labels" "median slowest" "$(tail -n +2 "$tmp/v1/breakdown.csv" | cut -d, -f2 | sort -u | tr '\n' ' ' | sed 's/ $//')"
# Deadlines relative to the deterministic job time: the baseline's with variation, the runs'
# own without.
expect "relative deadlines" 0 "$prismsim" run "$tiny" --out "$tmp/r1" --runs 6 --jobs 2 \
  --set variability=$variability --deadline 1x --deadline 100x --set 'simulation.deadlines=[1.02x]'
same "relative deadline = multiple x baseline" 1 \
  "$(json_get "$tmp/r1/summary.json" "int(abs(d['deadlines'][1]['deadline_s'] - d['baseline']['job_time_s']) < 1e-12)")"
same "relative deadlines in summary" '[1.02, 1, 100]' \
  "$(json_get "$tmp/r1/summary.json" "[x['of_deterministic_job_time'] for x in d['deadlines']]")"
same "nothing takes 100x" 0 "$(json_get "$tmp/r1/summary.json" "d['deadlines'][2]['p_job_time_exceeds']")"
same "varied runs miss the deterministic job time" 1 \
  "$(json_get "$tmp/r1/summary.json" "d['deadlines'][1]['p_job_time_exceeds']")"
same "relative deadline in text" 1 "$(grep -c ', 100x the deterministic job) = 0 over 6 runs' "$tmp/out")"
expect "relative deadline without variation" 0 "$prismsim" run "$tiny" --out "$tmp/r0" --deadline 1.1x
same "deterministic runs meet 1.1x" '[1.1, 0]' \
  "$(json_get "$tmp/r0/summary.json" "[d['deadlines'][0]['of_deterministic_job_time'], d['deadlines'][0]['p_job_time_exceeds']]")"
expect "zero multiple" 2 "$prismsim" run "$tiny" --out "$tmp/r2" --deadline 0x
expect "bad multiple in the scenario" 2 "$prismsim" run "$tiny" --out "$tmp/r2" --set 'simulation.deadlines=[fastx]'
expect "--attribute without variability" 2 "$prismsim" run "$tiny" --out "$tmp/v4" --attribute
same "--attribute message" "prismsim: error: --attribute needs a scenario with a 'variability' section" \
  "$(grep -v '^prismsim: warning: platform ' "$tmp/err" | head -1)"

# prismsim collective: nccl-tests' table, CSV, usage errors.
a100=platforms/a100-ndv4.yaml
# The whole range: algorithms and protocols change between sizes in one simulation, and members
# meet new mailboxes while others are being created (a lookup is a simcall).
expect "collective sweep" 0 "$prismsim" collective --platform "$a100" --op all_reduce --gpus 16 \
  --min-bytes 8 --max-bytes 8G --csv "$tmp/sweep.csv"
same "collective rows" 31 "$(grep -c 'float *sum' "$tmp/out")"
same "collective csv header" "size_bytes,count,type,redop,time_us,algbw_GBps,busbw_GBps,algorithm" \
  "$(head -1 "$tmp/sweep.csv")"
same "collective csv rows" 32 "$(wc -l <"$tmp/sweep.csv")"
expect "collective sweep again" 0 "$prismsim" collective --platform "$a100" --op all_reduce --gpus 16 \
  --min-bytes 8 --max-bytes 8G --csv "$tmp/sweep2.csv"
same "collective sweep is deterministic" "" "$(cmp "$tmp/sweep.csv" "$tmp/sweep2.csv")"
same "collective table has nccl-tests' rank lines" 16 "$(grep -c '^#  Rank ' "$tmp/out")"
same "collective table has nccl-tests' footer" 1 "$(grep -c '^# Avg bus bandwidth    : ' "$tmp/out")"
# The simulated table reads back as a measured log does: two nodes are inter-node for calibrate.
expect "collective table to read back" 0 "$prismsim" collective --platform "$a100" --op all_reduce \
  --gpus 16 --min-bytes 1M --max-bytes 4M
cp "$tmp/out" "$tmp/all_reduce_simulated.log"
expect "calibrate reads the simulated table" 0 "$prismsim" calibrate "$tmp/all_reduce_simulated.log" \
  --min-samples 2 --out "$tmp/simulated.yaml"
same "a simulated two-node table is inter-node" 3 \
  "$(grep -c '^collective  *2 .*  all_reduce \[[0-9]MiB,[0-9]MiB) inter_node$' "$tmp/out")"
expect "collective --iters below 1" 2 "$prismsim" collective --platform "$a100" --op broadcast \
  --gpus 2 --iters 0
expect "collective unknown op" 2 "$prismsim" collective --platform "$a100" --op allreduce --gpus 2
same "collective unknown op message" "prismsim: error: unknown collective 'allreduce'" "$(head -1 "$tmp/err")"
expect "collective too many GPUs" 2 "$prismsim" collective --platform "$a100" --op all_reduce --gpus 9999
expect "collective nvls without support" 2 "$prismsim" collective --platform "$a100" --op all_reduce \
  --gpus 8 --algo nvls
expect "collective bad platform value" 2 "$prismsim" collective --platform "$a100" --op all_reduce \
  --gpus 2 --set platform.node.nic.bandwidth=fast
expect "collective protocol streamed not a boolean" 2 "$prismsim" collective --platform "$a100" \
  --op all_reduce --gpus 2 --set platform.collectives.protocols.0.streamed=maybe
same "streamed message" \
  "--set:1:43: error: 'platform.collectives.protocols.0.streamed' must be true or false, got 'maybe'" \
  "$(head -1 "$tmp/err")"
expect "collective p2p_channels below 1" 2 "$prismsim" collective --platform "$a100" \
  --op all_to_all --gpus 2 --set platform.collectives.p2p_channels=0
same "p2p_channels message" \
  "--set:1:35: error: 'platform.collectives.p2p_channels' must be at least 1, got 0" \
  "$(head -1 "$tmp/err")"
# More exchanges at once: a bulk all-to-all across two nodes takes less time.
for p2p in 1 16; do
  expect "all-to-all with $p2p p2p channels" 0 "$prismsim" collective --platform "$a100" \
    --op all_to_all --gpus 16 --min-bytes 64M --max-bytes 64M \
    --set platform.collectives.p2p_channels=$p2p
  awk '$1 ~ /^[0-9]+$/ { print $6 }' "$tmp/out" >"$tmp/a2a-$p2p"
done
same "16 p2p channels beat 1 on a 64 MB all-to-all" 1 \
  "$(awk 'NR == FNR { one = $1; next } { print ($1 < 0.8 * one) }' "$tmp/a2a-1" "$tmp/a2a-16")"

# The run's cost estimate: printed by check, enforced by run unless --force.
expect "check prints the run estimate" 0 "$prismsim" check "$tiny"
same "check's estimate line" 1 "$(grep -c '^expected run (estimate, --jobs 1): [0-9]* MiB peak memory, .* s on one core' "$tmp/out")"
expect "run refused under --max-memory" 2 "$prismsim" run "$tiny" --max-memory 1MiB --out "$tmp/refused"
same "refusal message" 1 "$(grep -c '^prismsim: error: refusing to run: expected [0-9]* MiB peak memory, .* s on one core, .* events; up to [0-9]* MiB peak, but --max-memory is 1 MiB; .*--force' "$tmp/err")"
same "refused run wrote nothing" 0 "$(ls "$tmp/refused" 2>/dev/null | wc -l)"
expect "--force runs anyway" 0 "$prismsim" run "$tiny" --max-memory 1MiB --force --out "$tmp/forced"
expect "bad --max-memory" 2 "$prismsim" run "$tiny" --max-memory lots --out "$tmp/refused"
same "bad --max-memory message" 1 "$(grep -c "^prismsim: error: --max-memory 'lots'" "$tmp/err")"
expect "a shard refused under --max-memory" 2 "$prismsim" run "$tiny" --shard 1/2 --max-memory 1MiB \
  --out "$tmp/refused-shard"
same "shard refusal message" 1 "$(grep -c '^prismsim: error: refusing to run: expected .*--force' "$tmp/err")"
same "refused shard wrote nothing" 0 "$(ls "$tmp/refused-shard" 2>/dev/null | wc -l)"
# 1,048,576 GPUs on a 2:1 fabric (every rank simulated): refused at once, before any build.
huge=(--set parallelism.gpus=1048576 --set parallelism.dp=8192 --set workload.global_batch=16384
      --set platform.datacenters.0.nodes=131072 --set platform.fabric.levels=3
      --set platform.fabric.radix=256 --set "platform.fabric.oversubscription=[2,1]")
expect "huge run refused quickly" 2 timeout 120 "$prismsim" run workloads/scenarios/llama3-405b-h100.yaml \
  "${huge[@]}" --max-memory 8GiB --out "$tmp/huge"
same "huge refusal names the estimate" 1 "$(grep -c '^prismsim: error: refusing to run: expected' "$tmp/err")"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
