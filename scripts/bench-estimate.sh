#!/usr/bin/env bash
# The run cost estimate against measurement: for each case, `prismsim check`'s estimate and the
# whole `prismsim run` command's peak memory and CPU time (user + system, one job). The constants
# of simulator/workload/run_estimate.cpp were fitted to these figures (docs/design.md, "Cost of a
# run"). Usage: scripts/bench-estimate.sh [PRISMSIM]   (default: the release build)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/simulator/prismsim}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
big=(--set platform.fabric.levels=3 --set platform.fabric.radix=128)
cases=(
  "tiny|workloads/scenarios/tiny-gpt-h100.yaml"
  "dp-1024|workloads/scenarios/dp-h100.yaml --set simulation.steps=1"
  "70b-1024|workloads/scenarios/llama3-70b-h100.yaml"
  "70b-1024-every-rank|workloads/scenarios/llama3-70b-h100.yaml --set engine.tensor_parallel_symmetry=false"
  "70b-1024-2dc|workloads/scenarios/llama3-70b-h100-2dc.yaml"
  "405b-16k|workloads/scenarios/llama3-405b-h100.yaml"
  "70b-64k|workloads/scenarios/llama3-70b-h100.yaml --set parallelism.gpus=65536 --set parallelism.dp=2048 --set workload.global_batch=4096 --set platform.datacenters.0.nodes=8192 ${big[*]} --set platform.fabric.oversubscription=[1,1]"
  "70b-8k-2to1|workloads/scenarios/llama3-70b-h100.yaml --set parallelism.gpus=8192 --set parallelism.dp=256 --set platform.datacenters.0.nodes=1024 ${big[*]} --set platform.fabric.oversubscription=[2,1]"
)
printf '%-22s %-70s %s\n' case "estimate (check)" "measured (run, --jobs 1)"
for entry in "${cases[@]}"; do
  name=${entry%%|*}
  read -r -a args <<<"${entry#*|}"
  estimate=$("$bin" check "${args[@]}" 2>/dev/null | grep '^expected run' | sed 's/^expected run (estimate, --jobs 1): //')
  /usr/bin/time -f "%M %U %S" "$bin" run "${args[@]}" --out "$out/$name" --jobs 1 --force \
    >/dev/null 2>"$out/time"
  read -r kib user sys < <(tail -1 "$out/time")
  events=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["events_per_run"]; print(c["executions"] + c["transfers"])' "$out/$name/summary.json" 2>/dev/null || echo "?")
  printf '%-22s %-70s %.2f GiB, %.2f s CPU, %s executions+transfers\n' "$name" "${estimate%%;*}" \
    "$(echo "$kib" | awk '{print $1 / 1048576}')" "$(echo "$user $sys" | awk '{print $1 + $2}')" "$events"
done
