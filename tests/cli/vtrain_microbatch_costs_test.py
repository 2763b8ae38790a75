#!/usr/bin/env python3
"""scripts/vtrain-microbatch-costs.py on synthetic rows of known per-microbatch and per-sample
costs: it must recover them, skip pipelined rows, and refuse bad input with exit 2.
usage: vtrain_microbatch_costs_test.py SCRIPT
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = sys.argv[1]
failures = []


def case(i, tp, pp, dp, mb, batch, measured, simulated):
    sets = [f"parallelism.tp={tp}", f"parallelism.pp={pp}", f"parallelism.dp={dp}",
            f"workload.microbatch={mb}", f"workload.global_batch={batch}",
            "workload.model.hidden=1024", "workload.model.layers=10"]
    return {"id": f"vtrain-single:{i}", "suite": "vtrain-single", "sets": sets,
            "measured_s": measured, "in_sample_s": simulated}


# Measured: a = 30 ms, b = 5 ms a microbatch and sample (3 and 0.5 ms a layer); simulated:
# a = 20 ms, b = 8 ms. A pipelined row with a wrong time must be left out.
cases = []
for i, (dp, mb, batch) in enumerate([(1, 1, 16), (1, 2, 16), (2, 4, 32), (2, 8, 32)]):
    n = batch // (dp * mb)
    cases.append(case(i, 2, 1, dp, mb, batch, n * (0.030 + 0.005 * mb), n * (0.020 + 0.008 * mb)))
cases.append(case(9, 2, 2, 1, 1, 16, 99.0, 99.0))
with tempfile.TemporaryDirectory() as tmp:
    good = Path(tmp) / "fit.json"
    good.write_text(json.dumps({"cases": cases}))
    p = subprocess.run([sys.executable, SCRIPT, str(good)], capture_output=True, text=True)
    rows = [line.split() for line in p.stdout.splitlines() if line.startswith("  1024")]
    if p.returncode != 0 or rows != [["1024", "10", "2", "4", "3.00", "2.00", "0.50", "0.80"]]:
        failures.append(f"recovered costs: rc {p.returncode}, {rows}, {p.stderr}")
    one_size = Path(tmp) / "one.json"
    one_size.write_text(json.dumps({"cases": [case(0, 1, 1, 1, 2, 8, 1.0, 1.0),
                                              case(1, 1, 1, 2, 2, 16, 1.0, 1.0)]}))
    p = subprocess.run([sys.executable, SCRIPT, str(one_size)], capture_output=True, text=True)
    if p.returncode != 0 or "cannot be told apart" not in p.stdout:
        failures.append(f"one microbatch size: rc {p.returncode}, {p.stdout}")
    for name, text in (("bad.json", "{"), ("empty.json", '{"cases": []}')):
        path = Path(tmp) / name
        path.write_text(text)
        p = subprocess.run([sys.executable, SCRIPT, str(path)], capture_output=True, text=True)
        if p.returncode != 2 or f"{path}: error:" not in p.stderr:
            failures.append(f"{name}: rc {p.returncode}, {p.stderr}")

if failures:
    print("FAIL vtrain_microbatch_costs_test:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("PASS vtrain_microbatch_costs_test")
