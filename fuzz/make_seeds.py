#!/usr/bin/env python3
"""Builds the seed corpora of the fuzz targets from the repository's own files (nothing is
stored in the repository: scripts/fuzz.sh runs this into its build directory).

usage: make_seeds.py REPO OUTDIR

Writes OUTDIR/<target>/<seed> for every target of fuzz/CMakeLists.txt and OUTDIR/yaml.dict, a
libFuzzer dictionary of the keys and values found in the repository's YAML files. Scenario
seeds are bundles (fuzz/fuzz_support.hpp): the scenario with its includes renamed to sit next
to it, then each included file after a line "#@file NAME". Standard library only.
"""

import glob
import hashlib
import os
import random
import re
import subprocess
import sys

INCLUDE_KEYS = ("platform", "workload", "variability", "resilience")


def read(path):
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def write_seed(outdir, target, text):
    directory = os.path.join(outdir, target)
    os.makedirs(directory, exist_ok=True)
    data = text.encode() if isinstance(text, str) else text
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(directory, name), "wb") as handle:
        handle.write(data)


def bundle(path):
    """A scenario and the files its top-level include keys name, as one bundle."""
    text = read(path)
    base = os.path.dirname(path)
    parts = []
    for key in INCLUDE_KEYS:
        match = re.search(rf"^{key}:\s*([^\s#{{\[][^\s#]*)\s*(#.*)?$", text, re.M)
        if not match:
            continue
        included = os.path.normpath(os.path.join(base, match.group(1)))
        if not os.path.isfile(included):
            continue
        local = f"{key}.yaml"
        text = text[:match.start(1)] + local + text[match.end(1):]
        parts.append((local, read(included)))
    return text + "".join(f"#@file {name}\n{content}" for name, content in parts)


def overrides(repo):
    """--set assignments written in the repository's tests and sweeps, a few per seed."""
    found = []
    for path in glob.glob(os.path.join(repo, "tests", "**", "*"), recursive=True):
        if not os.path.isfile(path) or not path.endswith((".yaml", ".sh", ".cpp")):
            continue
        for match in re.finditer(r"--set[ =]'?\"?([A-Za-z_][\w.]*=[^\s'\"]*)", read(path)):
            found.append(match.group(1))
        for match in re.finditer(r"\"([a-z_]+(?:\.[\w]+)+=[^\"]*)\"", read(path)):
            found.append(match.group(1))
    return sorted(set(found))


def yaml_dictionary(files):
    tokens = set()
    for path in files:
        for match in re.finditer(r"^\s*-?\s*([A-Za-z_][\w]*):", read(path), re.M):
            tokens.add(match.group(1) + ":")
        for match in re.finditer(r"\b(\d+(?:\.\d+)?(?:Gbps|GBps|Tbps|TBps|us|ms|ns|GiB|Tflops|km))\b",
                                 read(path)):
            tokens.add(match.group(1))
    tokens.update(["&a ", "*a", "---", "{", "}", "[", "]", "#@file platform.yaml\n",
                   "#@file workload.yaml\n", "#@file variability.yaml\n", "lognormal",
                   "normal", "gamma", "uniform", "empirical", "mixture", "constant"])
    return sorted(tokens)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    repo, outdir = argv[1], argv[2]
    os.makedirs(outdir, exist_ok=True)
    yaml_files = sorted(
        p for pattern in ("platforms/*.yaml", "workloads/*.yaml", "workloads/*/*.yaml",
                          "calibration/*.yaml", "tests/bad_input/*.yaml",
                          "tests/bad_input/data/*.yaml", "tests/cli/*/*.yaml")
        for p in glob.glob(os.path.join(repo, pattern)))

    scenarios = [p for p in yaml_files if re.search(r"^(platform|workload):", read(p), re.M)]
    for path in scenarios:
        write_seed(outdir, "fuzz_scenario", bundle(path))
    for path in glob.glob(os.path.join(repo, "workloads", "variability", "*.yaml")):
        scenario = os.path.join(repo, "workloads", "scenarios", "tiny-gpt-h100.yaml")
        write_seed(outdir, "fuzz_scenario",
                   bundle(scenario) + "variability: variability.yaml\n"
                   + f"#@file variability.yaml\n{read(path)}")
    for path in glob.glob(os.path.join(repo, "platforms", "*.yaml")) + glob.glob(
            os.path.join(repo, "tests", "bad_input", "data", "*platform*.yaml")):
        write_seed(outdir, "fuzz_platform", read(path))
    for path in glob.glob(os.path.join(repo, "workloads", "*.yaml")) + glob.glob(
            os.path.join(repo, "tests", "bad_input", "data", "workload*.yaml")):
        write_seed(outdir, "fuzz_workload", read(path))

    assignments = overrides(repo)
    rng = random.Random(21)
    for assignment in assignments:
        write_seed(outdir, "fuzz_set", assignment)
    for _ in range(min(40, len(assignments))):
        write_seed(outdir, "fuzz_set", "\n".join(rng.sample(assignments, min(3, len(assignments)))))

    calibrate = os.path.join(repo, "tests", "cli", "calibrate")
    for path in glob.glob(os.path.join(calibrate, "*.json")):
        write_seed(outdir, "fuzz_kineto", read(path))
    maker = os.path.join(repo, "scripts", "make-kineto-trace.py")
    traces = os.path.join(outdir, "generated-traces")
    for cpu in ("none", "full"):
        subprocess.run([sys.executable, maker, traces, "--ranks", "2", "--events", "60",
                        "--gpus-per-node", "1", "--cpu-events", cpu], check=True,
                       stdout=subprocess.DEVNULL)
        for path in sorted(glob.glob(os.path.join(traces, "*.json"))):
            write_seed(outdir, "fuzz_kineto", read(path))

    for path in glob.glob(os.path.join(calibrate, "*.csv")):
        write_seed(outdir, "fuzz_samples_csv", read(path))
    # The layout calibrate_test.sh writes, a few rows of it.
    write_seed(outdir, "fuzz_samples_csv",
               "name,duration_us,gpu,node,step\n"
               "\"void gemm<128, 4>(float*, int)\",100.5,0,0,0\n"
               "rare_kernel,20,1,0,1\nncclKernel_AllReduce_RING_LL_Sum_float,31.5,1,0,1\n")
    write_seed(outdir, "fuzz_samples_csv", "name,duration_us\nmlp_up,12\nmlp_up,13.5\n")

    for path in glob.glob(os.path.join(calibrate, "*.log")):
        write_seed(outdir, "fuzz_nccl_log", read(path))

    for path in glob.glob(os.path.join(calibrate, "timeline-*.csv")):
        write_seed(outdir, "fuzz_timeline", read(path))
    # The layout calibrate_timeline_test.sh writes (2 replicas x 2 stages x 2 steps x 2
    # microbatches, with a reduce-scatter per stage), plus the pipeline's sends and receives.
    rows = ["dp_rank,stage,rank,step,optype,start_ts,duration,seq_id,mc,mb_id,gmc"]
    for step in (1, 2):
        for replica in (0, 1):
            for stage in (0, 1):
                rank, t = replica * 2 + stage, 0
                for mb in (0, 1):
                    rows.append(f"{replica},{stage},{rank},{step},forward-compute,{t}.0,"
                                f"{0.5 + 0.01 * rank},{mb},0,{mb},0")
                    rows.append(f"{replica},{stage},{rank},{step},backward-compute,{t + 1}.0,"
                                f"{0.75 + 0.02 * step},{mb},0,{mb},0")
                    side = "send" if stage == 0 else "recv"
                    rows.append(f"{replica},{stage},{rank},{step},forward-{side},{t}.5,"
                                f"0.{1 + stage},{mb},-1,-1,-1")
                    side = "recv" if stage == 0 else "send"
                    rows.append(f"{replica},{stage},{rank},{step},backward-{side},{t + 1}.5,"
                                f"0.{2 - stage},{mb},-1,-1,-1")
                    t += 2
                rows.append(f"{replica},{stage},{rank},{step},grads-reduce-scatter,"
                            f"{t + replica}.0,{1.25 - replica},0,-1,-1,-1")
    write_seed(outdir, "fuzz_timeline", "\n".join(rows) + "\n")

    with open(os.path.join(outdir, "yaml.dict"), "w", encoding="utf-8") as handle:
        for token in yaml_dictionary(yaml_files):
            escaped = "".join(f"\\x{ord(c):02X}" if c in '\\"' or not " " <= c <= "~" else c
                              for c in token)
            handle.write(f'"{escaped}"\n')
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
