#!/usr/bin/env bash
# Speed and size benchmarks. Prints figures; checks nothing (targets are in the README).
#   platform build: 16,384 and 131,072 GPUs (8 per node, 3-tier fat-tree of radix 128)
#   one data-parallel step of the bundled 7B layer stack on 1,024 GPUs, one process, one core
#   one step of Llama 3 70B on 1,024 H100 and of Llama 3 405B on 16,384 H100, one core
#   variability overhead per run, and 1,000 varied runs of the 70B step with --jobs 2
#   collectives (prismsim collective), and the same rings in SimGrid alone (prismsim-bench-engine)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release >/dev/null
bin=build/release/simulator
example=workloads/scenarios/dp-h100.yaml
fabric=(platform.fabric.levels=3 platform.fabric.radix=128 "platform.fabric.oversubscription=[1,1]")

echo "== platform build"
for gpus in 16384 131072; do
  "$bin/prismsim-bench-platform" "$example" "${fabric[@]}" "platform.datacenters.0.nodes=$((gpus / 8))"
done
echo "rail-optimised, 131,072 GPUs:"
"$bin/prismsim-bench-platform" "$example" "${fabric[@]}" platform.fabric.type=rail_optimized \
  platform.datacenters.0.nodes=16384
echo "two datacenters, 131,072 GPUs:"
"$bin/prismsim-bench-platform" workloads/scenarios/dp-h100-2dc.yaml "${fabric[@]}" \
  platform.datacenters.0.nodes=8192 platform.datacenters.1.nodes=8192

echo "== one data-parallel step, 1,024 GPUs, one core (whole command: parse, build, simulate)"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for fidelity in auto; do
  /usr/bin/time -f "%e s wall, %M KiB peak" taskset -c 0 "$bin/prismsim" run "$example" \
    --out "$out" --runs 1 --jobs 1 --set simulation.steps=1 \
    --set engine.collective_fidelity=$fidelity 2>"$out/time" >/dev/null
  events=$(grep -o '"executions": [0-9]*, "transfers": [0-9]*' "$out/summary.json")
  echo "collective fidelity $fidelity: $(tail -1 "$out/time"); $events"
done

echo "== one transformer step, one core (whole command: parse, build programs, simulate)"
for scenario in llama3-70b-h100 llama3-405b-h100; do
  /usr/bin/time -f "%e s wall, %M KiB peak" taskset -c 0 "$bin/prismsim" run \
    "workloads/scenarios/$scenario.yaml" --out "$out" --runs 1 --jobs 1 2>"$out/time" >"$out/text"
  events=$(grep -o '"executions": [0-9]*, "transfers": [0-9]*' "$out/summary.json")
  echo "$scenario: $(tail -1 "$out/time"); simulated $(grep -o 'step time: mean [0-9.]* [a-z]*' "$out/text" | head -1); $events"
done
/usr/bin/time -f "%e s wall, %M KiB peak" taskset -c 0 "$bin/prismsim" run \
  workloads/scenarios/llama3-70b-h100.yaml --out "$out" --runs 1 --jobs 1 \
  --set engine.tensor_parallel_symmetry=false 2>"$out/time" >"$out/text"
echo "llama3-70b-h100, every rank simulated: $(tail -1 "$out/time"); simulated $(grep -o 'step time: mean [0-9.]* [a-z]*' "$out/text" | head -1)"

echo "== shared links: Llama 3 405B on 16,384 H100, one core (quotient against every rank)"
step_run() {  # step_run LABEL ARGS...: one step of the 405B scenario, one core
  local label=$1
  shift
  /usr/bin/time -f "%e s wall, %M KiB peak" taskset -c 0 "$bin/prismsim" run \
    workloads/scenarios/llama3-405b-h100.yaml --out "$out" --runs 1 --jobs 1 "$@" \
    2>"$out/time" >/dev/null
  echo "$label: $(tail -1 "$out/time"); $(grep -o '"ranks_simulated": [0-9]*' "$out/summary.json"); step $(sed -n 2p "$out/runs.csv" | cut -d, -f4) s"
}
two_dcs=(--set "platform.datacenters=[{name: a, nodes: 1024}, {name: b, nodes: 1024}]"
         --set "platform.wan=[{between: [a, b], bandwidth: 3.2Tbps, latency: 650us}]")
for symmetry in true false; do
  step_run "2:1 leaf tier, symmetry $symmetry" --set "platform.fabric.oversubscription=[2, 1]" \
    --set engine.tensor_parallel_symmetry=$symmetry
  step_run "two datacenters, symmetry $symmetry" "${two_dcs[@]}" \
    --set engine.tensor_parallel_symmetry=$symmetry
done
step_run "4:1 aggregation tier" --set "platform.fabric.oversubscription=[1, 4]"

echo "== 65,536 and 131,072 GPUs, one step, one core"
for ratio in "1, 1" "2, 1"; do
  step_run "405B, 65,536 GPUs, [$ratio]" --set platform.datacenters.0.nodes=8192 \
    --set parallelism.gpus=65536 --set parallelism.dp=512 \
    --set "platform.fabric.oversubscription=[$ratio]"
done
step_run "405B, 131,072 GPUs" --set platform.fabric.radix=128 \
  --set platform.datacenters.0.nodes=16384 --set parallelism.gpus=131072 --set parallelism.dp=1024

echo "== variability: Llama 3 70B on 1,024 H100 with every source of variation on"
# Overhead per run: 20 varied runs (plus the one deterministic run a varied study adds) against 21
# deterministic runs, one core.
varied=workloads/scenarios/llama3-70b-h100-variability.yaml
for label in deterministic varied; do
  if [ $label = varied ]; then args=(--runs 20); else args=(--runs 21 --set variability=null); fi
  /usr/bin/time -f "%e" taskset -c 0 "$bin/prismsim" run "$varied" --out "$out" --jobs 1 \
    --set simulation.steps=1 "${args[@]}" 2>"$out/time-$label" >/dev/null
done
det=$(tail -1 "$out/time-deterministic")
var=$(tail -1 "$out/time-varied")
echo "21 runs of one step, one core: deterministic $det s, varied $var s (20 + baseline): $(echo "$var $det" | awk '{printf "%.2fx", $1 / $2}') per run"
/usr/bin/time -f "%e s wall, %M KiB peak" "$bin/prismsim" run "$varied" --out "$out" --jobs 2 \
  --runs 1000 --set simulation.steps=1 2>"$out/time" >"$out/text"
echo "1,000 runs of one step, --jobs 2: $(tail -1 "$out/time"); $(grep '^step time' "$out/text")"

echo "== collectives (prismsim collective, whole command)"
big=(--set platform.fabric.levels=3 --set "platform.fabric.oversubscription=[1,1]"
     --set platform.datacenters.0.nodes=1024)
run() {  # run LABEL ARGS...: prints wall time, peak memory and the last table row
  local label=$1
  shift
  /usr/bin/time -f "%e s wall, %M KiB peak" "$bin/prismsim" collective --platform platforms/h100-ndr.yaml \
    "$@" >"$out/table" 2>"$out/time"
  echo "$label: $(tail -1 "$out/time"); $(grep -v '^#' "$out/table" | tail -1 | awk '{print "busbw", $8, "GB/s,"}') $(grep '^#   [0-9]' "$out/table" | tail -1 | awk '{print $3}')"
}
run "coarse ring all-reduce, 1 GiB, 8,192 GPUs" --op all_reduce --gpus 8192 --min-bytes 1G \
  --max-bytes 1G --algo ring --fidelity coarse "${big[@]}"
run "auto all-reduce, 1 GiB, 8,192 GPUs" --op all_reduce --gpus 8192 --min-bytes 1G \
  --max-bytes 1G "${big[@]}"
run "step-by-step ring all-reduce (one channel), 1 GiB, 1,024 GPUs" --op all_reduce --gpus 1024 \
  --min-bytes 1G --max-bytes 1G --algo ring --fidelity step --set platform.collectives.channels=1
run "sweep 8 B to 8 GiB, 128 GPUs" --op all_reduce --gpus 128 --min-bytes 8 --max-bytes 8G
run "coarse ring all-reduce (one channel), 1 GiB, 8,192 GPUs" --op all_reduce --gpus 8192 \
  --min-bytes 1G --max-bytes 1G --algo ring --fidelity coarse --set platform.collectives.channels=1 \
  "${big[@]}"

echo "== SimGrid alone: the same one-channel rings without prismsim's runtime (the engine's floor)"
"$bin/prismsim-bench-engine" platforms/h100-ndr.yaml coarse 8192 platform.fabric.levels=3 \
  "platform.fabric.oversubscription=[1,1]" platform.datacenters.0.nodes=1024
"$bin/prismsim-bench-engine" platforms/h100-ndr.yaml step 1024
