#!/usr/bin/env bash
# Validation of the collective model against measured nccl-tests sweeps (Azure ND A100 v4):
# runs `prismsim collective` on the bundled a100-ndv4 platform for each measured log and prints,
# per size, measured and simulated busbw and the error, then the worst errors per log against the
# targets (10% at 1 MiB and above, 25% below). Also compares vTrain's single-node all-reduce
# tables, measured on another A100 cluster (a check of transfer to other hardware, not a target).
# Prints figures; exits 0 whatever they are.
# usage: scripts/validate-nccl.sh [VALIDATION_DIR]   (default ../shared/validation)
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:-../shared/validation}
cmake --preset release >/dev/null
cmake --build --preset release --target prismsim >/dev/null
prismsim=build/release/simulator/prismsim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# compare MEASURED SIMULATED LABEL GPUS: both "size time_us" files; prints rows and a summary line.
# Bus bandwidth as nccl-tests reports it for all-reduce, size / time x 2(n-1)/n (for one GPU,
# where that is 0, the algorithm bandwidth); the error is the simulated busbw's, relative.
compare() {
  awk -v label="$3" -v n="$4" '
    NR == FNR { sim[$1] = $2; next }
    ($1 in sim) {
      factor = n > 1 ? 2 * (n - 1) / n : 1
      bw = $1 / $2 / 1000 * factor; sbw = $1 / sim[$1] / 1000 * factor
      err = sbw / bw - 1; a = err < 0 ? -err : err
      printf "%14d %12.2f %12.2f %10.2f %10.2f %+8.1f%%\n", $1, $2, sim[$1], bw, sbw, 100 * err
      if ($1 >= 1048576) { if (a > big) big = a } else { nsmall++; if (a > small) small = a }
    }
    END {
      printf "%s: worst busbw error %.1f%% at 1 MiB and above (target 10%%): %s; ", label, 100 * big,
        big <= 0.10 ? "met" : "NOT met"
      if (nsmall == 0) printf "no sizes below 1 MiB\n\n"
      else printf "%.1f%% below (target 25%%): %s\n\n", 100 * small, small <= 0.25 ? "met" : "NOT met"
    }' "$2" "$1"
}

for log in "$data"/nccl-tests-azure-a100/all_reduce_*gpu.log; do
  gpus=$(grep -c '#  *Rank' "$log")
  # size and out-of-place time; the MPI tag, when present, is removed first.
  sed 's/^\[[0-9,]*\]<stdout>://' "$log" | awk '$1 ~ /^[0-9]+$/ { print $1, $5 }' >"$tmp/measured"
  min=$(head -1 "$tmp/measured" | cut -d' ' -f1)
  max=$(tail -1 "$tmp/measured" | cut -d' ' -f1)
  "$prismsim" collective --platform platforms/a100-ndv4.yaml --op all_reduce --gpus "$gpus" \
    --min-bytes "$min" --max-bytes "$max" --csv "$tmp/sim.csv" >/dev/null
  awk -F, 'NR > 1 { print $1, $5 }' "$tmp/sim.csv" >"$tmp/simulated"
  echo "# $(basename "$log"): $gpus GPUs  (size B, time us measured and simulated, busbw GB/s measured and simulated, busbw error)"
  compare "$tmp/measured" "$tmp/simulated" "$(basename "$log")" "$gpus"
done

for csv in "$data"/vtrain-a100/allreduce_a100_*gpu.csv; do
  gpus=$(basename "$csv" | sed 's/.*_\([0-9]*\)gpu.csv/\1/')
  awk -F, 'NR > 1 && ($1 % 1048576 == 0) && (($1 / 1048576) ~ /^(1|2|4|8|16|32|64|128|256|512|1024)$/) { print $1, $4 / 1000 }' "$csv" >"$tmp/measured"
  "$prismsim" collective --platform platforms/a100-ndv4.yaml --op all_reduce --gpus "$gpus" \
    --min-bytes 1M --max-bytes 1G --csv "$tmp/sim.csv" >/dev/null
  awk -F, 'NR > 1 { print $1, $5 }' "$tmp/sim.csv" >"$tmp/simulated"
  echo "# vTrain $(basename "$csv"): $gpus GPUs  (size B, time us measured and simulated, busbw GB/s measured and simulated, busbw error)"
  compare "$tmp/measured" "$tmp/simulated" "vtrain $(basename "$csv")" "$gpus"
done
