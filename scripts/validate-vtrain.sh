#!/usr/bin/env bash
# Validation of the transformer workload model against measured training iterations (vTrain:
# Megatron-DeepSpeed GPT on A100, ../shared/validation/vtrain-a100): simulates every row with
# `prismsim run calibration/vtrain-gpt-a100.yaml --set ...` and prints each row's measured and
# simulated iteration time and error, then the mean absolute percentage error per file (target:
# 10% on the multi-node rows and on the single-node rows). Prints figures; exits 0 whatever they are.
# usage: scripts/validate-vtrain.sh [VALIDATION_DIR] [--quiet]   (default ../shared/validation)
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:-../shared/validation}
quiet=${2:-}
cmake --preset release >/dev/null
cmake --build --preset release --target prismsim >/dev/null
prismsim=$PWD/build/release/simulator/prismsim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for file in ground_truth_multi_small ground_truth_single; do
  csv=$data/vtrain-a100/$file.csv
  # One line per row: row number, measured ms, then the --set arguments (columns by header name).
  tr -d '\r' < "$csv" | awk -F, '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    { printf "%d %s --set parallelism.gpus=%s --set workload.global_batch=%s --set workload.microbatch=%s --set workload.model.hidden=%s --set workload.model.heads=%s --set workload.model.layers=%s --set workload.model.sequence=%s --set parallelism.tp=%s --set parallelism.dp=%s --set parallelism.pp=%s\n",
        NR, $col["iteration time (ms)"], $col["# GPUs"], $col["global batch"], $col["micro batch"],
        $col["hidden size"], $col["attention heads"], $col["# layers"], $col["sequence length"],
        $col["tensor parallelism"], $col["data parallelism"], $col["pipeline parallelism"] }' \
    > "$tmp/$file.rows"
  # Simulate every row, as many at once as there are cores.
  xargs -P "$(nproc)" -L 1 sh -c '
    row=$1; shift; shift
    "$0" run calibration/vtrain-gpt-a100.yaml --jobs 1 --out "'"$tmp"'/$row" "$@" >/dev/null 2>"'"$tmp"'/$row.err" || exit 0
    sed -n "s/.*\"mean\": \([0-9.e+-]*\).*/\1/p" "'"$tmp"'/$row/summary.json" | head -1 > "'"$tmp"'/$row.s"
  ' "$prismsim" < "$tmp/$file.rows"
  [ -n "$quiet" ] || echo "== $file.csv: row, measured ms, simulated ms, error"
  while read -r row measured _; do
    simulated=$(cat "$tmp/$row.s" 2>/dev/null || true)
    if [ -z "$simulated" ]; then
      echo "$file.csv:$row: simulation failed: $(head -1 "$tmp/$row.err")"
      continue
    fi
    awk -v r="$row" -v m="$measured" -v s="$simulated" -v q="$quiet" 'BEGIN {
      e = 1000 * s / m - 1; if (q == "") printf "%6d %12.1f %12.1f %+8.1f%%\n", r, m, 1000 * s, 100 * e }'
    echo "$measured $simulated" >> "$tmp/$file.pairs"
  done < "$tmp/$file.rows"
  awk -v f="$file.csv" '{ e = 1000 * $2 / $1 - 1; s += e < 0 ? -e : e; n++ }
    END { printf "%s: %d rows simulated, MAPE %.2f%% (target 10%%): %s\n", f, n, 100 * s / n,
          s / n <= 0.10 ? "met" : "NOT met" }' "$tmp/$file.pairs"
  rm -rf "${tmp:?}"/[0-9]*
done
