#!/usr/bin/env python3
"""Splits vTrain's single-node step times into a cost per microbatch and a cost per sample.

Reads the JSON of `scripts/validate-training.py --json FILE` (with or without --fit). For the
rows without pipeline parallelism (a step is then its microbatches one after another, plus the
gradient all-reduce and optimizer), each group of one model (hidden, layers) and TP degree is
fitted by least squares in relative error to

    step = microbatches x (a + b x microbatch size)

for the measured and the simulated times: a is what a microbatch costs whatever its size (the
host's time and fixed latencies, when the GPU waits for them), b what each sample adds. Both are
printed per layer in ms.
usage: vtrain-microbatch-costs.py FILE.json [--simulated in_sample_s|logo_s|simulated_s]
"""

import argparse
import json
import sys
from collections import defaultdict


def setting(case: dict, key: str) -> int:
    for s in case["sets"]:
        name, _, value = s.partition("=")
        if name == key:
            return int(value)
    raise KeyError(f"case {case['id']} has no --set {key}")


def fit(rows: list[tuple[int, int, float]]) -> tuple[float, float]:
    """(a, b) minimising sum ((n a + n m b) / t - 1)^2 over rows (n microbatches of m, time t)."""
    s00 = s01 = s11 = r0 = r1 = 0.0
    for n, m, t in rows:
        x0, x1 = n / t, n * m / t
        s00 += x0 * x0
        s01 += x0 * x1
        s11 += x1 * x1
        r0 += x0
        r1 += x1
    det = s00 * s11 - s01 * s01
    if abs(det) <= 1e-12 * s00 * s11:
        raise ValueError("one microbatch size only: a and b cannot be told apart")
    return (r0 * s11 - r1 * s01) / det, (s00 * r1 - s01 * r0) / det


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json", help="the output of validate-training.py --json")
    ap.add_argument("--simulated", default="in_sample_s",
                    choices=["in_sample_s", "logo_s", "simulated_s"],
                    help="which simulated time (default in_sample_s; simulated_s: no fit)")
    args = ap.parse_args(argv)
    try:
        with open(args.json, encoding="utf-8") as f:
            cases = json.load(f)["cases"]
        groups: dict[tuple[int, int, int], list[tuple[int, int, float, float | None]]] = \
            defaultdict(list)
        for c in cases:
            if c["suite"] != "vtrain-single" or setting(c, "parallelism.pp") != 1:
                continue
            m = setting(c, "workload.microbatch")
            n = setting(c, "workload.global_batch") // (setting(c, "parallelism.dp") * m)
            key = (setting(c, "workload.model.hidden"), setting(c, "workload.model.layers"),
                   setting(c, "parallelism.tp"))
            groups[key].append((n, m, c["measured_s"], c.get(args.simulated)))
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"{args.json}: error: {e}", file=sys.stderr)
        return 2
    if not groups:
        print(f"{args.json}: error: no vtrain-single rows without pipeline parallelism",
              file=sys.stderr)
        return 2
    print(f"{'hidden':>6} {'layers':>6} {'tp':>3} {'rows':>4}   per microbatch and layer, ms"
          f"   per sample and layer, ms")
    print(f"{'':24}{'measured':>12} {'simulated':>10} {'measured':>12} {'simulated':>10}")
    for (hidden, layers, tp), rows in sorted(groups.items()):
        try:
            a_m, b_m = fit([(n, m, t) for n, m, t, _ in rows])
            sim = [(n, m, s) for n, m, _, s in rows if s]
            a_s, b_s = fit(sim) if len(sim) == len(rows) else (None, None)
        except ValueError as e:
            print(f"{hidden:6d} {layers:6d} {tp:3d}: {e}")
            continue
        ms = [f"{1e3 * x / layers:10.2f}" if x is not None else "       n/a"
              for x in (a_m, a_s, b_m, b_s)]
        print(f"{hidden:6d} {layers:6d} {tp:3d} {len(rows):4d}  {ms[0]} {ms[1]}   "
              f"{ms[2]} {ms[3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
