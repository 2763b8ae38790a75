#!/usr/bin/env bash
# Validation of the collective model against every nccl-tests measurement in the validation folder.
#
# 1. The simulator: `prismsim collective` on each log's platform (the log's GPUs, sizes and
#    nccl-tests iterations) prints per size the measured and simulated time and bus bandwidth and
#    the simulated busbw's error, then each log's worst errors against the targets (10% at 1 MiB
#    and above, 25% below). nccl-tests logs are targets; the bus-bandwidth tables (single-node
#    H100/H200/B200/A100 from Azure's guide and ml-engineering, vTrain's A100 tables, a torch
#    benchmark) are checks.
# 2. Cross-validation (unless --no-cross-validation): the platforms' fits again with
#    prismsim-calibrate, which prints leave-one-group-out errors beside the in-sample ones (fit on
#    every group but one, predict the one left out) and the errors of logs never fitted (ABCI's 8
#    and 16 nodes).
# Prints figures; exits 0 whatever they are.
# usage: scripts/validate-nccl.sh [--no-cross-validation] [VALIDATION_DIR]  (default ../shared/validation)
set -euo pipefail
cd "$(dirname "$0")/.."
cross_validation=1
if [ "${1:-}" = "--no-cross-validation" ]; then cross_validation=0; shift; fi
data=${1:-../shared/validation}
cmake --preset release >/dev/null
cmake --build --preset release --target prismsim prismsim-calibrate >/dev/null
prismsim=build/release/simulator/prismsim
calibrate=build/release/calibration/prismsim-calibrate
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
summary=$tmp/summary

# compare MEASURED SIMULATED LABEL GPUS OP KIND PLATFORM: both "size time_us" files; prints rows
# and a summary line (also appended to $summary). Bus bandwidth as nccl-tests computes it:
# all-reduce size / time x 2(n-1)/n, broadcast size / time (for one GPU the algorithm bandwidth);
# the error is the simulated busbw's, relative: t_measured / t_simulated - 1.
compare() {
  awk -v label="$3" -v n="$4" -v op="$5" -v kind="$6" -v platform="$7" -v summary="$summary" '
    NR == FNR { sim[$1] = $2; next }
    ($1 in sim) {
      factor = (op == "all_reduce" && n > 1) ? 2 * (n - 1) / n : 1
      bw = $1 / $2 / 1000 * factor; sbw = $1 / sim[$1] / 1000 * factor
      err = sbw / bw - 1; a = err < 0 ? -err : err
      printf "%14.0f %12.2f %12.2f %10.2f %10.2f %+8.1f%%\n", $1, $2, sim[$1], bw, sbw, 100 * err
      if ($1 >= 1048576) { nbig++; if (a > big) big = a } else { nsmall++; if (a > small) small = a }
    }
    END {
      b = nbig ? sprintf("%.1f%%", 100 * big) : "-"; s = nsmall ? sprintf("%.1f%%", 100 * small) : "-"
      met = (big <= 0.10 && small <= 0.25) ? "met" : "NOT met"
      if (kind != "target") met = "(check)"
      printf "%s: worst busbw error %s at 1 MiB and above (target 10%%), %s below (target 25%%): %s\n\n", label, b, s, met
      printf "%-58s %-11s %8s %8s  %s\n", label, platform, b, s, met >> summary
    }' "$2" "$1"
}

# simulate PLATFORM OP GPUS ITERS MEASURED [prismsim collective options]: simulated "size time_us".
simulate() {
  local platform=$1 op=$2 gpus=$3 iters=$4 measured=$5
  shift 5
  local min max
  min=$(head -1 "$measured" | cut -d' ' -f1)
  max=$(tail -1 "$measured" | cut -d' ' -f1)
  "$prismsim" collective --platform "$platform" --op "$op" --gpus "$gpus" --iters "$iters" \
    --min-bytes "$min" --max-bytes "$max" --csv "$tmp/sim.csv" "$@" >/dev/null
  awk -F, 'NR > 1 { print $1, $5 }' "$tmp/sim.csv" >"$tmp/simulated"
}

# log LOG PLATFORM [GPUS]: one nccl-tests log (GPUs from its Rank lines unless given).
log() {
  local file=$1 platform=$2 gpus=${3:-}
  local name op iters
  name=$(basename "$file")
  op=$(echo "$name" | sed 's/^\(all_reduce\|broadcast\)_.*/\1/')
  [ -n "$gpus" ] || gpus=$(grep -c '#  *Rank' "$file")
  iters=$(sed 's/^\[[0-9,]*\]<stdout>://' "$file" | awk '/^# nThread/ {
    for (i = 2; i < NF; i++) if ($i == "iters:" && $(i - 1) != "warmup" && $(i - 1) != "agg") print $(i + 1) }')
  [ -n "$iters" ] || iters=20  # nccl-tests' default
  # size and out-of-place time (the column named "time" in the header); MPI tags removed.
  sed 's/^\[[0-9,]*\]<stdout>://' "$file" | awk '
    /^# *size/ { for (i = 2; i <= NF; i++) if ($i == "time") { c = i - 1; break } }
    $1 ~ /^[0-9]+$/ && $1 > 0 { print $1, $c }' >"$tmp/measured"
  simulate "$platform" "$op" "$gpus" "$iters" "$tmp/measured"
  echo "# $name on $(basename "$platform" .yaml): $op, $gpus GPUs, $iters iterations  (size B, time us measured and simulated, busbw GB/s measured and simulated, busbw error)"
  compare "$tmp/measured" "$tmp/simulated" "$name" "$gpus" "$op" target "$(basename "$platform" .yaml)"
}

# table LABEL PLATFORM GPUS SIZE_COLUMN BUSBW_COLUMN FILTER_AWK CSV [prismsim collective options]:
# a bus-bandwidth table's rows (those FILTER_AWK selects) as "size time_us" for all-reduce.
table() {
  local label=$1 platform=$2 gpus=$3 size_col=$4 bw_col=$5 filter=$6 csv=$7
  shift 7
  awk -F, -v n="$gpus" -v sc="$size_col" -v bc="$bw_col" "NR > 1 && ($filter) {
    printf \"%.0f %.6f\\n\", \$sc, \$sc * 2 * (n - 1) / n / \$bc / 1000 }" "$csv" >"$tmp/measured"
  simulate "$platform" all_reduce "$gpus" 1 "$tmp/measured" "$@"
  echo "# $label on $(basename "$platform" .yaml): all_reduce, $gpus GPUs  (size B, time us measured and simulated, busbw GB/s measured and simulated, busbw error)"
  compare "$tmp/measured" "$tmp/simulated" "$label" "$gpus" all_reduce check "$(basename "$platform" .yaml)"
}

echo "## nccl-tests logs (targets)"
echo
for f in "$data"/nccl-tests-azure-a100/all_reduce_*gpu.log; do log "$f" platforms/a100-ndv4.yaml; done
for f in "$data"/nccl-tests-abci-a100/*.log; do log "$f" platforms/a100-abci.yaml; done
aws=$data/nccl-tests-aws-p5-p4de
log "$aws/all_reduce_16gpu_p4de_a100.log" platforms/a100-p4de.yaml 16
log "$aws/all_reduce_16gpu_p5_h100.log" platforms/h100-p5.yaml 16
log "$aws/all_reduce_16gpu_p5_h100_eks_excerpt.log" platforms/h100-p5.yaml 16

echo "## Bus-bandwidth tables (checks)"
echo
guide=$data/azure-benchmarking-guide-nd/nccl_allreduce_nvls_inplace_busbw.csv
table "Azure ND H100 v5 (in-place)" platforms/h100-ndr.yaml 8 5 6 '$1 == "ND H100 v5"' "$guide"
table "Azure ND H200 v5 (in-place)" platforms/h200-nd.yaml 8 5 6 '$1 == "ND H200 v5"' "$guide"
table "Azure ND A100 v4 80GB (in-place)" platforms/a100-ndv4.yaml 8 5 6 '$1 == "ND A100 v4"' "$guide"
mle=$data/ml-engineering-h200-b200
# gpu_count_rows LABEL SYSTEM PLATFORM GPUS: ml-engineering's 8 GiB all-reduce of SYSTEM on GPUS,
# as NCCL picks and with NVLS off (ring).
gpu_count_rows() {
  local label=$1 system=$2 platform=$3 g=$4
  awk -F, -v s="$system" -v g="$g" 'NR > 1 && $1 == s && $2 == g { print $4, $5 }' \
    "$mle/all_reduce_8gib_nvls_vs_ring_by_gpu_count.csv" >"$tmp/row"
  awk '{ printf "8589934592,%s\n", $1 }' "$tmp/row" | sed '1i size,busbw' >"$tmp/auto.csv"
  awk '{ printf "8589934592,%s\n", $2 }' "$tmp/row" | sed '1i size,busbw' >"$tmp/ring.csv"
  table "$label node, $g GPUs, 8 GiB, as NCCL picks" "$platform" "$g" 1 2 1 "$tmp/auto.csv"
  table "$label node, $g GPUs, 8 GiB, NVLS off (ring)" "$platform" "$g" 1 2 1 "$tmp/ring.csv" --algo ring
}
for g in 4 5 6 7 8; do
  gpu_count_rows H200 "8x H200 HGX node" platforms/h200-nd.yaml "$g"
  gpu_count_rows B200 "8x B200 AWS p6-b200.48xlarge" platforms/dgx-b200.yaml "$g"
done
table "torch all-reduce on 8x H200 (not nccl-tests)" platforms/h200-nd.yaml 8 2 3 1 \
  "$mle/all_reduce_torch_8xh200.csv"
for csv in "$data"/vtrain-a100/allreduce_a100_*gpu.csv; do
  gpus=$(basename "$csv" | sed 's/.*_\([0-9]*\)gpu.csv/\1/')
  awk -F, 'NR == 1 { print "size,busbw"; next }
    ($1 % 1048576 == 0) && (($1 / 1048576) ~ /^(1|2|4|8|16|32|64|128|256|512|1024)$/) {
      printf "%.0f,%s\n", $1, $1 / ($4 / 1e9) / 1e9 * 2 * ('"$gpus"' - 1) / '"$gpus"' }' "$csv" >"$tmp/vtrain.csv"
  table "vTrain $(basename "$csv")" platforms/a100-vtrain.yaml "$gpus" 1 2 1 "$tmp/vtrain.csv"
done

echo "## Worst busbw errors (from 1 MiB / below 1 MiB; targets 10% / 25%)"
printf "%-58s %-11s %8s %8s\n" "log" "platform" ">=1MiB" "<1MiB"
cat "$summary"
echo

[ "$cross_validation" -eq 1 ] || exit 0
echo "## Cross-validation: the platforms' fits with leave-one-group-out (prismsim-calibrate)"
echo
az=$data/nccl-tests-azure-a100
echo "### a100-ndv4: leave one GPU count out"
"$calibrate" --platform platforms/a100-ndv4.yaml "$az"/all_reduce_{1,2,4,8,16}gpu.log | sed -n '/^# worst busbw/,$p'
echo
ab=$data/nccl-tests-abci-a100
abci_fit=("$ab/all_reduce_4gpu.log" "$ab/all_reduce_8gpu.log" "$ab/all_reduce_16gpu_02nodes.log"
          "$ab/all_reduce_32gpu_04nodes.log" "$ab/broadcast_16gpu_02nodes.log"
          "$ab/broadcast_32gpu_04nodes.log")
abci_predict=(--predict "$ab/all_reduce_64gpu_08nodes.log" --predict "$ab/all_reduce_128gpu_16nodes.log"
              --predict "$ab/broadcast_64gpu_08nodes.log" --predict "$ab/broadcast_128gpu_16nodes.log")
echo "### a100-abci: fit on 1, 2 and 4 nodes, predict 8 and 16; leave one GPU count out among those fitted"
"$calibrate" --platform platforms/a100-abci.yaml --fix node.nvlink.efficiency --fix node.nvlink.latency \
  "${abci_fit[@]}" "${abci_predict[@]}" | sed -n '/^# worst busbw/,$p'
echo
echo "### a100-p4de, h100-p5: one two-node log each (no group to leave out); p5's EKS excerpt predicted"
"$calibrate" --platform platforms/a100-p4de.yaml --fix node.nvlink.efficiency --fix node.nvlink.latency \
  "$aws/all_reduce_16gpu_p4de_a100.log@16/2" | sed -n '/^# worst busbw/,$p'
"$calibrate" --platform platforms/h100-p5.yaml --fix node.nvlink.efficiency --fix node.nvlink.latency \
  --fix collectives.nvls.efficiency --fix collectives.nvls.latency \
  "$aws/all_reduce_16gpu_p5_h100.log@16/2" --predict "$aws/all_reduce_16gpu_p5_h100_eks_excerpt.log@16/2" |
  sed -n '/^# worst busbw/,$p'
echo
echo "### h100-ndr, h200-nd: leave one source out (Azure's table, ml-engineering's GPU-count table)"
h100_fixed=(--fix collectives.protocols.LL128.bandwidth_efficiency --fix collectives.protocols.LL128.base_latency
            --fix collectives.protocols.LL128.step_latency --fix collectives.protocols.Simple.base_latency
            --fix collectives.protocols.Simple.step_latency)
"$calibrate" --platform platforms/h100-ndr.yaml --groups source "${h100_fixed[@]}" \
  --busbw "$guide@system=ND H100 v5@gpus=8" \
  --busbw "$mle/all_reduce_8gib_nvls_vs_ring_by_gpu_count.csv@system=8x H200 HGX node@size=8589934592@busbw=busbw_nvls_off_GBps@algo=ring" \
  --predict-busbw "$mle/all_reduce_8gib_nvls_vs_ring_by_gpu_count.csv@system=8x H200 HGX node@size=8589934592" |
  sed -n '/^# worst busbw/,$p'
"$calibrate" --platform platforms/h200-nd.yaml --groups source "${h100_fixed[@]}" \
  --busbw "$guide@system=ND H200 v5@gpus=8" \
  --busbw "$mle/all_reduce_8gib_nvls_vs_ring_by_gpu_count.csv@system=8x H200 HGX node@size=8589934592@busbw=busbw_nvls_off_GBps@algo=ring" \
  --busbw "$mle/all_reduce_8gib_nvls_vs_ring_by_gpu_count.csv@system=8x H200 HGX node@size=8589934592" |
  sed -n '/^# worst busbw/,$p'
echo
echo "### dgx-b200: NVLink and NVLS efficiencies, leave one GPU count out (8 GiB only; latencies kept)"
b200="$mle/all_reduce_8gib_nvls_vs_ring_by_gpu_count.csv@system=8x B200 AWS p6-b200.48xlarge@size=8589934592"
b200_fixed=("${h100_fixed[@]}" --fix collectives.protocols.LL.bandwidth_efficiency
            --fix collectives.protocols.LL.base_latency --fix collectives.protocols.LL.step_latency
            --fix node.nvlink.latency --fix collectives.nvls.latency --fix collectives.launch_latency)
"$calibrate" --platform platforms/dgx-b200.yaml "${b200_fixed[@]}" \
  --busbw "$b200@busbw=busbw_nvls_off_GBps@algo=ring" --busbw "$b200" | sed -n '/^# worst busbw/,$p'
