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
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DPRISMSIM_BUILD_TESTS=OFF >/dev/null
cmake --build build/release --target prismsim >/dev/null
prismsim=build/release/simulator/prismsim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# compare MEASURED SIMULATED LABEL: both "size time_us" files; prints rows and a summary line.
compare() {
  awk -v label="$3" '
    NR == FNR { sim[$1] = $2; next }
    ($1 in sim) {
      err = sim[$1] / $2 - 1; a = err < 0 ? -err : err
      printf "%14d %12.2f %12.2f %+8.1f%%\n", $1, $2, sim[$1], 100 * err
      if ($1 >= 1048576) { if (a > big) big = a } else { nsmall++; if (a > small) small = a }
    }
    END {
      printf "%s: worst error %.1f%% at 1 MiB and above (target 10%%): %s; ", label, 100 * big,
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
  echo "# $(basename "$log"): $gpus GPUs  (size, measured us, simulated us, error)"
  compare "$tmp/measured" "$tmp/simulated" "$(basename "$log")"
done

for csv in "$data"/vtrain-a100/allreduce_a100_*gpu.csv; do
  gpus=$(basename "$csv" | sed 's/.*_\([0-9]*\)gpu.csv/\1/')
  awk -F, 'NR > 1 && ($1 % 1048576 == 0) && (($1 / 1048576) ~ /^(1|2|4|8|16|32|64|128|256|512|1024)$/) { print $1, $4 / 1000 }' "$csv" >"$tmp/measured"
  "$prismsim" collective --platform platforms/a100-ndv4.yaml --op all_reduce --gpus "$gpus" \
    --min-bytes 1M --max-bytes 1G --csv "$tmp/sim.csv" >/dev/null
  awk -F, 'NR > 1 { print $1, $5 }' "$tmp/sim.csv" >"$tmp/simulated"
  echo "# vTrain $(basename "$csv"): $gpus GPUs  (size, measured us, simulated us, error)"
  compare "$tmp/measured" "$tmp/simulated" "vtrain $(basename "$csv")"
done
