#!/usr/bin/env python3
"""Validation of prismsim's training step time against measured iterations (issue 15).

Every measured training configuration in ../shared/validation/ becomes a prismsim scenario plus
`--set` overrides (the case tables in calibration/cases/, docs/validation.md):

  vtrain-single, vtrain-multi  vTrain's Megatron-DeepSpeed GPT iterations on A100, each CSV row
                               through calibration/vtrain-gpt-a100.yaml (as scripts/validate-vtrain.sh)
  megatron-ci                  Megatron-LM's CI GPT cases on one DGX A100 (calibration/cases/
                               megatron-ci.csv over calibration/cases/megatron-ci-gpt.yaml)
  throughput                   NeMo, Megatron-Bridge and torchtitan throughput rows (calibration/
                               cases/throughput-dense.csv over calibration/cases/throughput/*.yaml)

It simulates every case (`prismsim run ... --runs 1 --jobs 1`, deterministic; results cached by
command hash), prints measured against simulated step time per case, the mean absolute
percentage error (MAPE) per group, and per sub-group (one group, one GPU count, one global batch
and sequence: the same job in several layouts) the Spearman rank correlation of measured and
simulated times.

With --fit it also fits parameters (calibration/cases/fit.json, or --param) on a surrogate: each
fitted case is simulated on a grid of parameter values, the log step time is interpolated
between grid points, and the parameters minimise the mean over groups of the mean squared log
error (Nelder-Mead). It reports the in-sample error (fit on every group) next to the
leave-one-group-out error (fit on all groups but one, then the held-out group SIMULATED at the
fitted values), and the fitted values of each fold. A value that only the held-out group keys (its
own GPU type) takes its nearest relatives' (a parameter's "fallback" attributes in fit.json: the
same die and framework, then the same die), else the mean of the others. A parameter along
which no case's grid times move (its cases' models never read it) is reported and not fitted.

Python 3 standard library only. Prints figures; exits 0 whatever they are (2 on bad input).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import hashlib
import itertools
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Collection, Iterable, Sequence

REPO = Path(__file__).resolve().parent.parent
CASES_DIR = REPO / "calibration" / "cases"


class InputError(Exception):
    """Bad input: reported as `file:line: error: ...` and exit code 2."""


# ---------------------------------------------------------------------------------------------
# Cases


@dataclass
class Case:
    """One measured training configuration and the prismsim command that describes it."""

    id: str  # suite:row, e.g. "throughput:40", "vtrain-single:17", "megatron-ci:<case>"
    suite: str
    group: str  # leave-one-group-out unit and MAPE unit
    subgroup: str  # same job (GPUs, global batch, sequence): layouts ranked by Spearman
    measured_s: float
    scenario: str  # path relative to the repository root
    sets: tuple[str, ...]  # --set PATH=VALUE, in order (later ones win)
    attrs: dict[str, str]  # gpu, die, framework, source, suite, group: what fits key on
    use: str = "fit"  # "fit": fitted and scored; "score": scored only, never fitted
    approximated: tuple[str, ...] = ()  # codes of calibration/cases/approximations.csv

    def config_key(self) -> tuple:
        """Cases with the same key are the same simulated configuration."""
        return (self.scenario, self.sets)


def read_csv(path: Path) -> list[tuple[int, dict[str, str]]]:
    """Rows of a CSV file with their line numbers (header = line 1)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"{path}: error: cannot read: {e.strerror}") from None
    lines = text.splitlines()
    reader = csv.DictReader(lines)
    rows = []
    for row in reader:
        rows.append((reader.line_num, {k.strip(): (v or "").strip() for k, v in row.items()}))
    if len(rows) + 1 != len([l for l in lines if l.strip()]):
        raise InputError(f"{path}: error: a quoted field spans lines; rows cannot be numbered")
    return rows


def need(row: dict[str, str], column: str, path: Path, line: int) -> str:
    if column not in row:
        raise InputError(f"{path}:{line}: error: no column '{column}'")
    return row[column]


def number(text: str, what: str, path: Path, line: int) -> float:
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{path}:{line}: error: {what} '{text}' is not a number") from None


def split_sets(text: str) -> tuple[str, ...]:
    sets = tuple(s.strip() for s in text.split(";") if s.strip())
    for s in sets:
        if "=" not in s:
            raise ValueError(s)
    return sets


VTRAIN_COLUMNS = [  # (CSV column, --set path): the mapping of scripts/validate-vtrain.sh
    ("# GPUs", "parallelism.gpus"),
    ("global batch", "workload.global_batch"),
    ("micro batch", "workload.microbatch"),
    ("hidden size", "workload.model.hidden"),
    ("attention heads", "workload.model.heads"),
    ("# layers", "workload.model.layers"),
    ("sequence length", "workload.model.sequence"),
    ("tensor parallelism", "parallelism.tp"),
    ("data parallelism", "parallelism.dp"),
    ("pipeline parallelism", "parallelism.pp"),
]


def load_vtrain(data: Path) -> list[Case]:
    cases = []
    for suite, name in (("vtrain-multi", "ground_truth_multi_small.csv"),
                        ("vtrain-single", "ground_truth_single.csv")):
        path = data / "vtrain-a100" / name
        for line, row in read_csv(path):
            sets = tuple(f"{p}={int(number(need(row, c, path, line), c, path, line))}"
                         for c, p in VTRAIN_COLUMNS)
            ms = number(need(row, "iteration time (ms)", path, line), "iteration time", path, line)
            h, layers = row["hidden size"], row["# layers"]
            gpus, gbs, seq = row["# GPUs"], row["global batch"], row["sequence length"]
            if suite == "vtrain-multi":
                group = f"vTrain A100 GPT {row['Parameters (billion)']}B ({gpus} GPUs)"
            else:
                group = f"vTrain A100 GPT h{h} L{layers}"
            cases.append(Case(
                id=f"{suite}:{line}", suite=suite, group=group,
                subgroup=f"{gpus} GPUs, batch {gbs} x {seq}", measured_s=ms / 1000.0,
                scenario="calibration/vtrain-gpt-a100.yaml", sets=sets,
                attrs={"gpu": "A100", "framework": "megatron-deepspeed", "source": "vTrain"}))
    return cases


CI_GROUP = "Megatron-LM CI A100 GPT h512 L12 (8 GPUs)"


def ci_measured(path: Path) -> float:
    """Median iteration time over iterations >= 5 except 51-52 (warm-up after the checkpoint)."""
    times = []
    for line, row in read_csv(path):
        it = int(number(need(row, "iteration", path, line), "iteration", path, line))
        t = number(need(row, "iteration_time_s", path, line), "iteration_time_s", path, line)
        if it >= 5 and it not in (51, 52):
            times.append(t)
    if not times:
        raise InputError(f"{path}: error: no iteration >= 5")
    return statistics.median(times)


def ci_arguments(path: Path) -> dict[str, str]:
    """The `--flag: value` lines and ENV_VARS of a Megatron CI model_config.yaml."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"{path}: error: cannot read: {e.strerror}") from None
    args = {}
    for line in text.splitlines():
        m = re.match(r"^\s+(--[\w-]+|[A-Z][A-Z0-9_]+):\s*(.*?)\s*(#.*)?$", line)
        if m:
            args[m.group(1)] = m.group(2)
    return args


def check_ci_case(case: str, sets: Sequence[str], codes: Sequence[str], args: dict[str, str],
                  where: str) -> None:
    """The case table's settings and approximation codes must agree with the case's
    model_config.yaml."""
    value = {"parallelism.tp": "1", "parallelism.pp": "1", "parallelism.cp": "1",
             "parallelism.data_parallel": "ddp", "parallelism.recompute": "none",
             "parallelism.overlap_gradient_reduce": "false", "parallelism.schedule": "1f1b",
             "parallelism.sequence_parallel": "false", "workload.precision": "bf16",
             "workload.model.attention": "flash", "engine.collective_algorithm": "auto",
             "parallelism.gradient_accumulation": "fused"}
    for s in sets:
        path, _, v = s.partition("=")
        value[path] = v
    on = lambda flag: args.get(flag, "false").lower() == "true"  # noqa: E731
    expected = {
        "parallelism.tp": args.get("--tensor-model-parallel-size", "1"),
        "parallelism.pp": args.get("--pipeline-model-parallel-size", "1"),
        "parallelism.cp": args.get("--context-parallel-size", "1"),
        "parallelism.data_parallel": "zero1" if on("--use-distributed-optimizer") else "ddp",
        "parallelism.recompute": args.get("--recompute-granularity", "none"),
        "parallelism.overlap_gradient_reduce": "true" if on("--overlap-grad-reduce") else "false",
        "parallelism.schedule":
            "interleaved" if "--num-layers-per-virtual-pipeline-stage" in args else "1f1b",
        "parallelism.sequence_parallel": "true" if on("--sequence-parallel") else "false",
        "workload.precision": "fp16" if on("--fp16") else "bf16",
        "workload.model.attention":
            "unfused" if args.get("--transformer-impl") == "local" else "flash",
        "engine.collective_algorithm": "ring" if args.get("NCCL_ALGO") == "Ring" else "auto",
        "parallelism.gradient_accumulation":
            "main_grad" if on("--no-gradient-accumulation-fusion") else "fused",
    }
    for path, want in expected.items():
        if value[path] != want:
            raise InputError(f"{where}: error: case {case} sets {path}={value[path]} but its "
                             f"model_config.yaml says {want}")
    if "--num-layers-per-virtual-pipeline-stage" in args:
        layers = int(args.get("--num-layers", "12"))
        per = int(args["--num-layers-per-virtual-pipeline-stage"])
        want = str(layers // (per * int(expected["parallelism.pp"])))
        if value.get("parallelism.virtual_stages") != want:
            raise InputError(f"{where}: error: case {case} needs parallelism.virtual_stages={want}")
    check_cp_code(case, int(expected["parallelism.cp"]), "megatron-lm", codes, where)
    deterministic = on("--deterministic-mode")
    if deterministic != ("ci-deterministic" in codes):
        raise InputError(f"{where}: error: case {case} "
                         f"{'runs' if deterministic else 'does not run'} --deterministic-mode: "
                         f"approximation code ci-deterministic "
                         f"{'missing' if deterministic else 'wrongly listed'}")


def check_cp_code(case: str, cp: int, framework: str, codes: Sequence[str], where: str) -> None:
    """A case with context parallelism names how its framework passes keys and values (prismsim
    all-gathers them): torchtitan's ring attention, or Transformer Engine's ring of sends and
    receives (Megatron's default `--cp-comm-type p2p`)."""
    want = "ring-attention" if framework == "torchtitan" else "te-cp-ring"
    for code in ("ring-attention", "te-cp-ring"):
        if (code in codes) != (cp > 1 and code == want):
            raise InputError(f"{where}: error: case {case} (cp {cp}, {framework}): approximation "
                             f"code {code} {'wrongly listed' if code in codes else 'missing'}")


def load_megatron_ci(data: Path) -> list[Case]:
    table = CASES_DIR / "megatron-ci.csv"
    rows = read_csv(table)
    common_sets: tuple[str, ...] = ()
    common_codes: tuple[str, ...] = ()
    by_case = {}
    for line, row in rows:
        try:
            sets = split_sets(need(row, "sets", table, line))
        except ValueError as e:
            raise InputError(f"{table}:{line}: error: override '{e}' has no '='") from None
        codes = tuple(need(row, "approximated", table, line).split())
        if row["case"] == "(all)":
            common_sets, common_codes = sets, codes
        else:
            by_case[row["case"]] = (line, sets, codes)
    root = data / "megatron-ci-a100"
    cases = []
    found = sorted(p.name for p in root.iterdir() if (p / "model_config.yaml").exists())
    for name in found:
        if name not in by_case:
            raise InputError(f"{table}: error: no row for measured case '{name}'")
    for name, (line, sets, codes) in sorted(by_case.items()):
        if name not in found:
            raise InputError(f"{table}:{line}: error: no measured case '{name}' in {root}")
        check_ci_case(name, common_sets + sets, common_codes + codes,
                      ci_arguments(root / name / "model_config.yaml"), f"{table}:{line}")
        cases.append(Case(
            id=f"megatron-ci:{name}", suite="megatron-ci", group=CI_GROUP,
            subgroup="8 GPUs, batch 32 x 1024",
            measured_s=ci_measured(root / name / "iteration_time.csv"),
            scenario="calibration/cases/megatron-ci-gpt.yaml", sets=common_sets + sets,
            attrs={"gpu": "A100", "framework": "megatron-lm", "source": "Megatron-LM CI"},
            approximated=common_codes + codes))
    return cases


THROUGHPUT_LAYOUT = [  # (source column, --set path): taken from every throughput row
    ("gpus", "parallelism.gpus"), ("tp", "parallelism.tp"), ("pp", "parallelism.pp"),
    ("cp", "parallelism.cp"), ("dp", "parallelism.dp"), ("global_batch", "workload.global_batch"),
    ("micro_batch", "workload.microbatch"), ("seq_len", "workload.model.sequence"),
]


LAYOUT_KEYS = {path for _, path in THROUGHPUT_LAYOUT} | {
    "parallelism.schedule", "parallelism.virtual_stages"}


def set_path(setting: str) -> str:
    """The path of a `PATH=VALUE` override."""
    return setting.partition("=")[0]


def check_layout_override(case: str, sets: Sequence[str], codes: Sequence[str],
                          where: str) -> None:
    """A throughput row's layout comes from the measured table; a case may replace it only under
    the code `layout-from-recipe` (the table's layout shown impossible or contradicted by every
    recipe release), and that code needs a replacement."""
    overridden = sorted({set_path(s) for s in sets} & LAYOUT_KEYS)
    if bool(overridden) != ("layout-from-recipe" in codes):
        what = (f"sets {', '.join(overridden)} without" if overridden
                else "lists but overrides no layout setting with")
        raise InputError(f"{where}: error: case {case} {what} approximation code "
                         f"layout-from-recipe")


def merge_sets(layout: Sequence[str], row_sets: Sequence[str]) -> list[str]:
    """The source's layout settings, then the case row's others. A row's layout setting takes
    the source's place (or follows the layout), so that a case whose layout is another row's
    runs, caches and ranks as that row's command."""
    replace = {set_path(s): s for s in row_sets if set_path(s) in LAYOUT_KEYS}
    merged = [replace.pop(set_path(s), s) for s in layout] + list(replace.values())
    return merged + [s for s in row_sets if set_path(s) not in LAYOUT_KEYS]


def load_throughput(data: Path) -> list[Case]:
    source = data / "throughput-dense-llm" / "throughput_dense.csv"
    table = CASES_DIR / "throughput-dense.csv"
    measured_rows = dict(read_csv(source))
    cases, covered = [], set()
    for line, row in read_csv(table):
        where = f"{table}:{line}"
        src_line = int(number(need(row, "line", table, line), "line", table, line))
        if src_line not in measured_rows:
            raise InputError(f"{where}: error: {source} has no line {src_line}")
        if src_line in covered:
            raise InputError(f"{where}: error: line {src_line} of {source} has two cases")
        covered.add(src_line)
        src = measured_rows[src_line]
        for column in ("model", "precision", "section"):
            if need(row, column, table, line) != src.get(column):
                raise InputError(f"{where}: error: {column} '{row[column]}' but line {src_line} "
                                 f"of {source} says '{src.get(column)}'")
        sets = [f"{p}={int(number(src[c], c, source, src_line))}" for c, p in THROUGHPUT_LAYOUT]
        vp = src.get("vp", "")
        if vp not in ("", "n/a", "1"):
            sets += ["parallelism.schedule=interleaved",
                     f"parallelism.virtual_stages={int(number(vp, 'vp', source, src_line))}"]
        try:
            row_sets = list(split_sets(row["sets"]))
        except ValueError as e:
            raise InputError(f"{where}: error: override '{e}' has no '='") from None
        codes = tuple(row.get("approximated", "").split())
        check_layout_override(f"throughput:{src_line}", row_sets, codes, where)
        sets = merge_sets(sets, row_sets)
        scenario = CASES_DIR / "throughput" / need(row, "scenario", table, line)
        if not scenario.exists():
            raise InputError(f"{where}: error: no scenario {scenario.relative_to(REPO)}")
        gbs = number(src["global_batch"], "global_batch", source, src_line)
        seq = number(src["seq_len"], "seq_len", source, src_line)
        gpus = number(src["gpus"], "gpus", source, src_line)
        tps = number(src["tokens_per_s_per_gpu"], "tokens_per_s_per_gpu", source, src_line)
        check_cp_code(f"throughput:{src_line}", int(number(src["cp"], "cp", source, src_line)),
                      need(row, "framework", table, line), codes, where)
        use = need(row, "use", table, line)
        if use not in ("fit", "score"):
            raise InputError(f"{where}: error: use '{use}' must be 'fit' or 'score'")
        cases.append(Case(
            id=f"throughput:{src_line}", suite="throughput", group=need(row, "group", table, line),
            subgroup=f"{gpus:.0f} GPUs, batch {gbs:.0f} x {seq:.0f}",
            measured_s=gbs * seq / (tps * gpus), scenario=str(scenario.relative_to(REPO)),
            sets=tuple(sets),
            attrs={"gpu": need(row, "gpu", table, line),
                   "framework": need(row, "framework", table, line), "source": src["source"]},
            use=use, approximated=codes))
    missing = sorted(set(measured_rows) - covered)
    if missing:
        raise InputError(f"{table}: error: lines {missing} of {source} have no case")
    return cases


SUITES = {"vtrain-single": load_vtrain, "vtrain-multi": load_vtrain,
          "megatron-ci": load_megatron_ci, "throughput": load_throughput}


# The silicon of each GPU of the cases: SKUs of one die differ in memory, power and clocks,
# not in their tensor cores (H200 is GH100 with HBM3e; GB200's GPUs are B200s).
GPU_DIES = {"A100": "Ampere GA100", "H100": "Hopper GH100", "H100-96GB-500W": "Hopper GH100",
            "H200": "Hopper GH100", "B200": "Blackwell B200", "GB200": "Blackwell B200",
            "GB300": "Blackwell Ultra B300"}


def load_cases(data: Path, suites: Sequence[str]) -> list[Case]:
    loaded: dict[Callable, list[Case]] = {}
    cases = []
    for suite in suites:
        loader = SUITES[suite]
        if loader not in loaded:
            loaded[loader] = loader(data)
        cases += [c for c in loaded[loader] if c.suite == suite]
    for c in cases:
        if c.attrs["gpu"] not in GPU_DIES:
            raise InputError(f"error: case {c.id}: GPU '{c.attrs['gpu']}' has no die in "
                             f"GPU_DIES (scripts/validate-training.py; known: "
                             f"{', '.join(GPU_DIES)})")
        c.attrs.setdefault("die", GPU_DIES[c.attrs["gpu"]])
        c.attrs.setdefault("suite", c.suite)
        c.attrs.setdefault("group", c.group)
        c.attrs.setdefault("all", "all")
    return cases


# ---------------------------------------------------------------------------------------------
# Simulation


@dataclass
class Result:
    step_time_s: float | None
    error: str = ""


Request = tuple[Case, tuple[str, ...]]  # a case and extra --set overrides (applied last)
SimulateMany = Callable[[Sequence[Request]], list[Result]]


class Simulator:
    """Runs prismsim on requests, at most `processes` at once, caching results by command."""

    def __init__(self, binary: Path, cache: Path | None, processes: int, progress: bool):
        self.binary = binary
        self.cache = cache
        self.processes = max(1, processes)
        self.progress = progress
        self.binary_digest = file_digest(binary)
        self._digests: dict[Path, str] = {}
        self.simulated = 0
        self.cached = 0

    def command(self, case: Case, extra: Sequence[str], out: str = "OUT") -> list[str]:
        cmd = [str(self.binary), "run", case.scenario, "--runs", "1", "--jobs", "1",
               "--seed", "1", "--out", out]
        for s in tuple(case.sets) + tuple(extra):
            cmd += ["--set", s]
        return cmd

    def _inputs_digest(self, scenario: Path) -> str:
        """The scenario file and the platform/workload/variability files it names."""
        h = hashlib.sha256()
        files = [scenario]
        text = scenario.read_text(encoding="utf-8")
        for m in re.finditer(r"^(?:platform|workload|variability):[ \t]*([^\s{#][^\s#]*)", text,
                             re.MULTILINE):
            files.append((scenario.parent / m.group(1)).resolve())
        for f in files:
            if f not in self._digests:
                self._digests[f] = file_digest(f) if f.exists() else "missing"
            h.update(f"{f.relative_to(REPO) if f.is_relative_to(REPO) else f}:"
                     f"{self._digests[f]}\n".encode())
        return h.hexdigest()

    def key(self, case: Case, extra: Sequence[str]) -> str:
        payload = json.dumps([self.binary_digest, self._inputs_digest(REPO / case.scenario),
                              case.scenario, list(case.sets) + list(extra)])
        return hashlib.sha256(payload.encode()).hexdigest()

    def _run_one(self, case: Case, extra: Sequence[str], key: str) -> Result:
        out = tempfile.mkdtemp(prefix="prismsim-validate-")
        try:
            cmd = self.command(case, extra, out)
            p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
            if p.returncode == 0:
                with open(Path(out) / "summary.json", encoding="utf-8") as f:
                    result = Result(json.load(f)["step_time_s"]["mean"])
            else:
                lines = [l for l in p.stderr.splitlines() if l.strip()]
                errors = [l for l in lines if "error" in l]
                result = Result(None, f"exit {p.returncode}: "
                                      f"{(errors or lines or ['no message'])[0][:300]}")
        finally:
            shutil.rmtree(out, ignore_errors=True)
        if self.cache is not None and (result.step_time_s is not None or p.returncode == 2):
            path = self.cache / key[:2] / f"{key}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}.{id(result)}")
            tmp.write_text(json.dumps({"step_time_s": result.step_time_s, "error": result.error,
                                       "command": self.command(case, extra, "OUT")[1:]}))
            os.replace(tmp, path)
        return result

    def __call__(self, requests: Sequence[Request]) -> list[Result]:
        results: list[Result | None] = [None] * len(requests)
        todo = []
        for i, (case, extra) in enumerate(requests):
            key = self.key(case, extra)
            path = self.cache / key[:2] / f"{key}.json" if self.cache is not None else None
            if path is not None and path.exists():
                stored = json.loads(path.read_text())
                results[i] = Result(stored["step_time_s"], stored["error"])
                self.cached += 1
            else:
                todo.append((i, case, extra, key))
        if todo:
            started = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(self.processes) as pool:
                futures = {pool.submit(self._run_one, c, e, k): i for i, c, e, k in todo}
                done = 0
                for future in concurrent.futures.as_completed(futures):
                    results[futures[future]] = future.result()
                    done += 1
                    if self.progress and (done % max(1, len(todo) // 20) == 0 or done == len(todo)):
                        print(f"  simulated {done}/{len(todo)} ({time.monotonic() - started:.0f} s)",
                              file=sys.stderr, flush=True)
            self.simulated += len(todo)
        return [r for r in results if r is not None]


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------
# Statistics


def mape(pairs: Iterable[tuple[float, float]]) -> float | None:
    """Mean of |simulated / measured - 1| over (measured, simulated) pairs."""
    errors = [abs(s / m - 1) for m, s in pairs]
    return sum(errors) / len(errors) if errors else None


def ranks(values: Sequence[float]) -> list[float]:
    """Ranks from 1, ties given their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rank correlation (Pearson's of the ranks); None below 3 points or if a
    side has no spread."""
    if len(xs) < 3:
        return None
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def subgroup_spearman(cases: Sequence[Case], simulated: dict[str, float]
                      ) -> dict[str, tuple[int, float | None]]:
    """Per sub-group: (distinct configurations, Spearman of measured vs simulated). Cases with
    the same configuration are one point (their measured times averaged)."""
    by_sub: dict[str, dict[tuple, list[Case]]] = {}
    for c in cases:
        if c.id in simulated:
            by_sub.setdefault(c.subgroup, {}).setdefault(c.config_key(), []).append(c)
    out = {}
    for sub, configs in sorted(by_sub.items()):
        if len(configs) < 3:
            continue
        ms = [statistics.fmean(c.measured_s for c in group) for group in configs.values()]
        ss = [simulated[group[0].id] for group in configs.values()]
        out[sub] = (len(configs), spearman(ms, ss))
    return out


# ---------------------------------------------------------------------------------------------
# Fitted parameters and the surrogate


_UNIT = re.compile(r"^\s*([-+0-9.eE]+)\s*([A-Za-z/%]*)\s*$")


def parse_value(text: str) -> tuple[float, str]:
    m = _UNIT.match(str(text))
    if not m:
        raise ValueError(f"'{text}' is not a number with an optional unit (e.g. 0.8, 72us)")
    return float(m.group(1)), m.group(2)


@dataclass
class FitParameter:
    """A `--set` path fitted within [lo, hi] (values in `unit`), one value per scope key."""

    path: str
    lo: float
    hi: float
    unit: str = ""
    scale: str = "log"  # log | linear: the coordinate the surrogate interpolates in
    points: int = 3  # grid values per case
    scope: tuple[str, ...] = ()  # case attributes that key a separate value; () = one value
    interpolation: str = "lagrange"  # lagrange (one polynomial through all points) | spline
    # (Catmull-Rom, local cubic) | linear
    # The cases it applies to: those where every (attribute, values) pair of applies_to holds,
    # less those where every pair of excludes does; attribute `approximated` matches any of a
    # case's codes. Elsewhere the path keeps the case's value and the case's grid has no points
    # along it.
    applies_to: tuple[tuple[str, tuple[str, ...]], ...] = ()
    excludes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # The fitted value multiplies the value the case itself sets for the path (a GPU's peak).
    factor: bool = False
    # A scope key the fit never saw (a held-out group's own GPU) takes the mean of the values
    # whose cases share all these attributes with the case, else all but the last, ..., else
    # every value of the parameter: e.g. ("die", "framework"): the same die and framework, then
    # the same die, then all.
    fallback: tuple[str, ...] = ()

    def __post_init__(self):
        self._nodes: list[float] | None = None
        if self.factor and self.unit:
            raise ValueError(f"{self.path}: a factor has no unit, got '{self.unit}'")
        if not self.lo < self.hi:
            raise ValueError(f"{self.path}: min {self.lo} must be below max {self.hi}")
        if self.scale not in ("log", "linear"):
            raise ValueError(f"{self.path}: scale '{self.scale}' must be 'log' or 'linear'")
        if self.scale == "log" and self.lo <= 0:
            raise ValueError(f"{self.path}: a log scale needs a positive min")
        if self.points < 2:
            raise ValueError(f"{self.path}: points must be at least 2")
        if self.interpolation not in ("lagrange", "spline", "linear"):
            raise ValueError(f"{self.path}: interpolation '{self.interpolation}' must be "
                             "'lagrange', 'spline' or 'linear'")

    def u(self, value: float) -> float:
        return math.log(value) if self.scale == "log" else value

    def value(self, u: float) -> float:
        return math.exp(u) if self.scale == "log" else u

    @property
    def u_lo(self) -> float:
        return self.u(self.lo)

    @property
    def u_hi(self) -> float:
        return self.u(self.hi)

    def nodes(self) -> list[float]:
        """Grid points in the interpolation coordinate, evenly spaced."""
        n = self.points - 1
        lo, hi = self.u_lo, self.u_hi
        return [lo + (hi - lo) * j / n for j in range(self.points)]

    def text(self, value: float) -> str:
        return f"{value:.6g}{self.unit}"

    def set(self, value: float, case: Case | None = None) -> str:
        if not self.factor:
            return f"{self.path}={self.text(value)}"
        base, unit = self.case_value(case)
        return f"{self.path}={base * value:.6g}{unit}"

    def case_value(self, case: Case) -> tuple[float, str]:
        """The value `case` sets for the path (the last setting wins); a factor scales it."""
        own = [s.partition("=")[2] for s in case.sets if set_path(s) == self.path]
        if not own:
            raise InputError(f"error: factor {self.path} applies to case {case.id}, which does "
                             f"not set {self.path}")
        try:
            return parse_value(own[-1])
        except ValueError as e:
            raise InputError(f"error: case {case.id}: {self.path}: {e}") from None

    def applies(self, case: Case) -> bool:
        def holds(attr: str, values: tuple[str, ...]) -> bool:
            if attr == "approximated":
                return any(code in values for code in case.approximated)
            if attr not in case.attrs:
                raise InputError(f"error: {self.path}: '{attr}' is not an attribute of case "
                                 f"{case.id} (known: approximated, "
                                 f"{', '.join(sorted(case.attrs))})")
            return case.attrs[attr] in values

        return (all(holds(a, v) for a, v in self.applies_to)
                and not (self.excludes and all(holds(a, v) for a, v in self.excludes)))

    def weights(self, u: float) -> list[float]:
        """Interpolation weights of the grid points at u (clamped to the range)."""
        if self._nodes is None:
            self._nodes = self.nodes()
        nodes = self._nodes
        u = min(max(u, nodes[0]), nodes[-1])
        if self.interpolation == "lagrange":
            return lagrange_weights(nodes, u)
        if self.interpolation == "spline":
            return spline_weights(nodes, u)
        return linear_weights(nodes, u)


def lagrange_weights(nodes: Sequence[float], x: float) -> list[float]:
    out = []
    for j, xj in enumerate(nodes):
        w = 1.0
        for k, xk in enumerate(nodes):
            if k != j:
                w *= (x - xk) / (xj - xk)
        out.append(w)
    return out


def spline_weights(nodes: Sequence[float], x: float) -> list[float]:
    """Catmull-Rom cubic spline through evenly spaced nodes (C1; end slopes from a linear
    extrapolation of the first and last two nodes): local, so a kink between two nodes does
    not ripple across the range as a polynomial through all of them does."""
    n = len(nodes)
    if n < 3:
        return linear_weights(nodes, x)
    h = nodes[1] - nodes[0]
    j = min(max(int((x - nodes[0]) / h), 0), n - 2)
    t = (x - nodes[j]) / h
    local = [(-t ** 3 + 2 * t * t - t) / 2, (3 * t ** 3 - 5 * t * t + 2) / 2,
             (-3 * t ** 3 + 4 * t * t + t) / 2, (t ** 3 - t * t) / 2]
    out = [0.0] * n
    for c, k in zip(local, (j - 1, j, j + 1, j + 2)):
        if k < 0:  # ghost node 2 y0 - y1
            out[0] += 2 * c
            out[1] -= c
        elif k >= n:  # ghost node 2 y[n-1] - y[n-2]
            out[n - 1] += 2 * c
            out[n - 2] -= c
        else:
            out[k] += c
    return out


def linear_weights(nodes: Sequence[float], x: float) -> list[float]:
    out = [0.0] * len(nodes)
    for j in range(len(nodes) - 1):
        if x <= nodes[j + 1] or j == len(nodes) - 2:
            t = (x - nodes[j]) / (nodes[j + 1] - nodes[j])
            out[j], out[j + 1] = 1 - t, t
            return out
    return out


def parse_param(spec: str) -> FitParameter:
    """`PATH=MIN:MAX[:SCALE[:POINTS[:SCOPE[:INTERPOLATION]]]]`, SCOPE attributes joined by '+'
    (e.g. gpu, framework, gpu+framework; 'all' = one value)."""
    path, eq, rest = spec.partition("=")
    fields = rest.split(":")
    if not eq or len(fields) < 2 or not path:
        raise ValueError(f"--param '{spec}': expected PATH=MIN:MAX[:SCALE[:POINTS[:SCOPE"
                         "[:INTERPOLATION]]]]")
    return param_from_dict({"path": path, "min": fields[0], "max": fields[1],
                            **({"scale": fields[2]} if len(fields) > 2 else {}),
                            **({"points": fields[3]} if len(fields) > 3 else {}),
                            **({"scope": fields[4].split("+")} if len(fields) > 4 else {}),
                            **({"interpolation": fields[5]} if len(fields) > 5 else {})})


def param_from_dict(d: dict) -> FitParameter:
    known = {"path", "min", "max", "scale", "points", "scope", "interpolation", "applies_to",
             "excludes", "factor", "fallback", "comment"}
    unknown = sorted(set(d) - known)
    if unknown:
        raise ValueError(f"parameter {d.get('path', '?')}: unknown key(s) {unknown} "
                         f"(known: {sorted(known)})")
    lo, unit_lo = parse_value(d["min"])
    hi, unit_hi = parse_value(d["max"])
    if unit_lo != unit_hi:
        raise ValueError(f"{d['path']}: min and max need the same unit, got '{unit_lo}' and "
                         f"'{unit_hi}'")
    scope = tuple(s for s in d.get("scope", []) if s not in ("", "all", "global"))
    try:
        points = int(d.get("points", 3))
    except ValueError:
        raise ValueError(f"{d['path']}: points '{d['points']}' is not a whole number") from None
    factor = d.get("factor", False)
    if not isinstance(factor, bool):
        raise ValueError(f"{d['path']}: factor must be true or false, got '{factor}'")
    fallback = d.get("fallback", [])
    if not isinstance(fallback, list) or not all(isinstance(a, str) and a for a in fallback):
        raise ValueError(f"{d['path']}: fallback must be a list of case attributes, e.g. "
                         "[\"die\", \"framework\"]")
    return FitParameter(path=d["path"], lo=lo, hi=hi, unit=unit_lo, scale=d.get("scale", "log"),
                        points=points, scope=scope,
                        interpolation=d.get("interpolation", "lagrange"),
                        applies_to=case_filter(d, "applies_to"),
                        excludes=case_filter(d, "excludes"), factor=factor,
                        fallback=tuple(fallback))


def case_filter(d: dict, key: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """{"attribute": ["value", ...]} of a parameter, as sorted pairs."""
    spec = d.get(key, {})
    if not isinstance(spec, dict) or not all(
            isinstance(v, list) and v and all(isinstance(x, str) for x in v)
            for v in spec.values()):
        raise ValueError(f"{d['path']}: {key} must map case attributes to lists of values, "
                         f"e.g. {{\"approximated\": [\"nvfp4\"]}}")
    return tuple(sorted((a, tuple(v)) for a, v in spec.items()))


def parse_grid_every(items: Sequence[str], where: str) -> dict[str, int]:
    """SUITE=K items: fit on every K-th case of each group of SUITE."""
    every: dict[str, int] = {}
    for item in items:
        suite, _, k = str(item).partition("=")
        if suite not in SUITES or not k.isdigit() or int(k) < 1:
            raise InputError(f"{where}: error: grid_every '{item}': want SUITE=K with SUITE one "
                             f"of {', '.join(SUITES)} and K >= 1")
        every[suite] = int(k)
    return every


def load_fit_config(path: Path) -> tuple[list[FitParameter], dict[str, int]]:
    """The fitted parameters and the grid's thinning per suite (`grid_every`)."""
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(f"{path}: error: cannot read: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}:{e.colno}: error: {e.msg}") from None
    known = {"parameters", "grid_every", "comment"}
    unknown = sorted(set(config) - known) if isinstance(config, dict) else []
    if unknown:
        raise InputError(f"{path}: error: unknown key(s) {unknown} (known: "
                         f"{', '.join(sorted(known))})")
    every = config.get("grid_every", [])
    if not isinstance(every, list):
        raise InputError(f"{path}: error: grid_every must be a list of \"SUITE=K\"")
    try:
        return ([param_from_dict(p) for p in config["parameters"]],
                parse_grid_every(every, str(path)))
    except (KeyError, ValueError, TypeError) as e:
        raise InputError(f"{path}: error: {e}") from None


def check_params(params: Sequence[FitParameter], cases: Sequence[Case],
                 codes: set[str]) -> None:
    """Case filters name known codes and attributes; a factor's cases set its path."""
    for p in params:
        for attr, values in p.applies_to + p.excludes:
            unknown = sorted(set(values) - codes) if attr == "approximated" else []
            if unknown:
                raise InputError(f"error: {p.path}: unknown approximation code(s) {unknown} "
                                 "(calibration/cases/approximations.csv)")
        for c in (c for c in cases if p.applies(c)):
            if p.factor:
                p.case_value(c)
            missing = [a for a in p.fallback if a not in c.attrs]
            if missing:
                raise InputError(f"error: {p.path}: fallback attribute '{missing[0]}' is not an "
                                 f"attribute of case {c.id} (known: {', '.join(sorted(c.attrs))})")


Variable = tuple[int, tuple[str, ...]]  # (parameter index, scope key)


def variable_of(params: Sequence[FitParameter], i: int, case: Case) -> Variable:
    try:
        return (i, tuple(case.attrs[a] for a in params[i].scope))
    except KeyError as e:
        raise InputError(f"error: scope attribute {e} of {params[i].path} is not an attribute "
                         f"of case {case.id} (known: {sorted(case.attrs)})") from None


def grid_points(params: Sequence[FitParameter]) -> list[tuple[int, ...]]:
    """Grid indices, row-major (the first parameter varies slowest)."""
    return list(itertools.product(*[range(p.points) for p in params]))


def grid_overrides(params: Sequence[FitParameter], point: tuple[int, ...],
                   case: Case | None = None) -> tuple[str, ...]:
    return tuple(p.set(p.value(p.nodes()[j]), case) for p, j in zip(params, point))


def active(params: Sequence[FitParameter], case: Case) -> list[int]:
    """Indices of the parameters that apply to `case`."""
    return [i for i, p in enumerate(params) if p.applies(case)]


def case_grid(params: Sequence[FitParameter], case: Case) -> list[tuple[str, ...]]:
    """The overrides of each grid point of `case`: its applicable parameters, row-major."""
    own = [params[i] for i in active(params, case)]
    return [grid_overrides(own, point, case) for point in grid_points(own)]


def tensor_weights(per_param: Sequence[Sequence[float]]) -> list[tuple[int, float]]:
    """The grid weights, the tensor product of each parameter's interpolation weights (the
    first parameter varies slowest): its nonzero entries (grid index, weight), in index order."""
    out = [(0, 1.0)]
    for w in per_param:
        nz = [(j, x) for j, x in enumerate(w) if x != 0.0]
        n = len(w)
        out = [(i * n + j, a * x) for i, a in out for j, x in nz]
    return out


class Surrogate:
    """Per case, the log step time on the grid; interpolated in between."""

    def __init__(self, params: Sequence[FitParameter], cases: Sequence[Case],
                 grid_log_times: dict[str, list[float]]):
        self.params = list(params)
        self.cases = {c.id: c for c in cases if c.id in grid_log_times}
        self.y = grid_log_times
        self.vars = {cid: tuple(variable_of(self.params, i, c) for i in active(self.params, c))
                     for cid, c in self.cases.items()}
        self._moving_of: dict[str, set[Variable]] = {}

    def predict_log(self, case_id: str, u: dict[Variable, float]) -> float:
        w = tensor_weights([self.params[v[0]].weights(u[v]) for v in self.vars[case_id]])
        y = self.y[case_id]
        return sum(y[i] * x for i, x in w)

    def inert(self, case_ids: Iterable[str] | None = None) -> set[Variable]:
        """Variables along which the simulated time of none of `case_ids` (default: all) moves
        on the grid (a parameter that their models never read: e.g. the attention kernel's
        efficiency where the attention runs unfused): those cases cannot determine them."""
        seen: set[Variable] = set()
        moving: set[Variable] = set()
        for cid in self.vars if case_ids is None else case_ids:
            seen.update(self.vars[cid])
            moving.update(self._moving(cid))
        return seen - moving

    def _axes(self, cid: str) -> tuple[list[int], list[int]]:
        """Points and stride of each axis of case `cid`'s grid (row-major, grid_points)."""
        sizes = [self.params[v[0]].points for v in self.vars[cid]]
        return sizes, [math.prod(sizes[k + 1:]) for k in range(len(sizes))]

    def _moving(self, cid: str) -> set[Variable]:
        """The variables along which case `cid`'s grid times move."""
        if cid not in self._moving_of:
            y = self.y[cid]
            sizes, strides = self._axes(cid)
            # Each grid point against the point with index 0 along axis k.
            self._moving_of[cid] = {
                v for k, v in enumerate(self.vars[cid])
                if any(abs(y[i] - y[i - (i // strides[k] % sizes[k]) * strides[k]]) > 1e-12
                       for i in range(len(y)))}
        return self._moving_of[cid]

    def drop(self, variables: set[Variable]) -> None:
        """Removes inert variables: each case's grid keeps the points with index 0 along them
        (its variables that move are unchanged)."""
        for cid, own in self.vars.items():
            keep = [k for k, v in enumerate(own) if v not in variables]
            if len(keep) == len(own):
                continue
            sizes, strides = self._axes(cid)
            y = self.y[cid]
            self.y[cid] = [y[sum(j * strides[k] for j, k in zip(point, keep))]
                           for point in itertools.product(*[range(sizes[k]) for k in keep])]
            self.vars[cid] = tuple(own[k] for k in keep)


@dataclass
class Cell:
    """Training cases of one group that share their variables. Each case's log step times on
    the grid and its log measured time are scaled by the square root of its weight, 1 / (cases
    of the group), so the cell's share of the objective is the sum over its cases of
    (row . W - target)^2 for the grid weights W at those variables."""

    group: str
    vars: tuple[Variable, ...]
    rows: list[list[float]]
    targets: list[float]


def build_cells(s: Surrogate, groups: dict[str, list[str]]) -> list[Cell]:
    """The objective, up to the factor 1 / (number of groups): the sum over groups of the mean
    squared log error of the group's cases."""
    cells: dict[tuple, Cell] = {}
    for g, ids in sorted(groups.items()):
        root_w = math.sqrt(1.0 / len(ids))
        for cid in ids:
            cell = cells.setdefault((g, s.vars[cid]), Cell(g, s.vars[cid], [], []))
            cell.rows.append([root_w * y for y in s.y[cid]])
            cell.targets.append(root_w * math.log(s.cases[cid].measured_s))
    return list(cells.values())


def objective(s: Surrogate, cells: Sequence[Cell], u: dict[Variable, float]) -> float:
    """Sum over the cells' cases of the weighted squared log error. The grid weights are a
    tensor product of each variable's interpolation weights, partly zero where the
    interpolation is local (spline, linear): only the nonzero ones are formed and multiplied,
    once per set of variables."""
    weights: dict[Variable, list[float]] = {v: s.params[v[0]].weights(x) for v, x in u.items()}
    grid_weights: dict[tuple[Variable, ...], list[tuple[int, float]]] = {}
    total = 0.0
    for cell in cells:
        w = grid_weights.get(cell.vars)
        if w is None:
            w = grid_weights[cell.vars] = tensor_weights([weights[v] for v in cell.vars])
        for row, target in zip(cell.rows, cell.targets):
            e = sum(row[i] * x for i, x in w) - target
            total += e * e
    return total


def nelder_mead(f: Callable[[list[float]], float], x0: Sequence[float], step: float,
                max_evals: int) -> tuple[list[float], float, int]:
    """Minimise f from x0 (deterministic); stops when the simplex is smaller than 1e-7 in every
    coordinate or after max_evals evaluations. Returns (x, f(x), evaluations)."""
    n = len(x0)
    simplex = [list(x0)] + [[x + (step if i == k else 0.0) for i, x in enumerate(x0)]
                            for k in range(n)]
    values = [f(x) for x in simplex]
    evals = n + 1
    while evals < max_evals:
        order = sorted(range(n + 1), key=lambda i: values[i])
        simplex = [simplex[i] for i in order]
        values = [values[i] for i in order]
        size = max(max(abs(a - b) for a, b in zip(x, simplex[0])) for x in simplex[1:])
        if size < 1e-7:
            break
        centroid = [sum(x[i] for x in simplex[:-1]) / n for i in range(n)]
        worst = simplex[-1]
        reflected = [c + (c - w) for c, w in zip(centroid, worst)]
        fr = f(reflected)
        evals += 1
        if fr < values[0]:
            expanded = [c + 2 * (c - w) for c, w in zip(centroid, worst)]
            fe = f(expanded)
            evals += 1
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            inside = fr >= values[-1]
            contracted = [c + (0.5 * (w - c) if inside else 0.5 * (r - c))
                          for c, w, r in zip(centroid, worst, reflected)]
            fc = f(contracted)
            evals += 1
            if fc < min(fr, values[-1]):
                simplex[-1], values[-1] = contracted, fc
            else:
                best = simplex[0]
                simplex = [best] + [[b + 0.5 * (x - b) for b, x in zip(best, p)]
                                    for p in simplex[1:]]
                values = [values[0]] + [f(x) for x in simplex[1:]]
                evals += n
    i = min(range(n + 1), key=lambda k: values[k])
    return simplex[i], values[i], evals


@dataclass
class FitResult:
    u: dict[Variable, float]  # fitted variables (interpolation coordinate)
    objective: float  # mean over the training groups of their mean squared log error
    evaluations: int


def components(cells: Sequence[Cell]) -> list[tuple[list[Variable], list[Cell]]]:
    """Cells joined by shared variables; the objective is a sum over these, so each is fitted
    alone (a fold changes only the held-out group's)."""
    parent: dict[Variable, Variable] = {}

    def root(v: Variable) -> Variable:
        while parent.setdefault(v, v) != v:
            v = parent[v]
        return v

    for cell in cells:
        for v in cell.vars[1:]:
            parent[root(v)] = root(cell.vars[0])
        root(cell.vars[0])
    by_root: dict[Variable, list[Cell]] = {}
    for cell in cells:
        by_root.setdefault(root(cell.vars[0]), []).append(cell)
    out = []
    for members in by_root.values():
        out.append((sorted({v for c in members for v in c.vars}), members))
    return sorted(out, key=lambda vc: vc[0])


def fit_component(s: Surrogate, variables: list[Variable], cells: list[Cell],
                  start: dict[Variable, float] | None) -> tuple[dict[Variable, float], int]:
    lo = [s.params[v[0]].u_lo for v in variables]
    span = [s.params[v[0]].u_hi - s.params[v[0]].u_lo for v in variables]

    def unpack(z: Sequence[float]) -> dict[Variable, float]:
        return {v: lo[k] + span[k] * min(max(z[k], 0.0), 1.0) for k, v in enumerate(variables)}

    def f(z: Sequence[float]) -> float:
        penalty = sum((x - min(max(x, 0.0), 1.0)) ** 2 for x in z)
        return objective(s, cells, unpack(z)) + 10.0 * penalty

    n = len(variables)
    max_evals = 1000 + 500 * n
    if start is not None:
        starts = [[(start[v] - lo[k]) / span[k] if v in start else 0.5
                   for k, v in enumerate(variables)]]
    else:
        starts = [[0.5] * n, [0.25] * n, [0.75] * n]
    best: tuple[list[float], float] | None = None
    total = 0
    for z0 in starts:
        z, value, evals = nelder_mead(f, z0, 0.2, max_evals)
        total += evals
        if best is None or value < best[1]:
            best = (z, value)
    z, value, evals = nelder_mead(f, best[0], 0.05, max_evals)
    total += evals
    if value > best[1]:
        z = best[0]
    return unpack([min(max(x, 0.0), 1.0) for x in z]), total


def fit(s: Surrogate, groups: dict[str, list[str]], start: dict[Variable, float] | None = None,
        memo: dict | None = None) -> FitResult:
    """Minimise the mean over `groups` of the mean squared log error of the surrogate.
    Variables live in [0, 1] of their parameter's range. Deterministic: each connected set of
    variables starts from the middle, a quarter and three quarters of every range (or from
    `start`) and restarts from the best; `memo` reuses the fit of a set whose groups and cases
    are the same (so folds refit only the held-out group's or case's set)."""
    cells = build_cells(s, groups)
    u: dict[Variable, float] = {}
    total = 0
    for variables, members in components(cells):
        key = (tuple(sorted({(c.group, tuple(groups[c.group])) for c in members})),
               tuple(variables))
        if memo is not None and key in memo:
            u.update(memo[key])
            continue
        fitted, evals = fit_component(s, variables, members, start)
        total += evals
        u.update(fitted)
        if memo is not None:
            memo[key] = fitted
    value = objective(s, cells, u) / len(groups) if groups else 0.0
    # A variable that only cases outside `groups` read (a fold's held-out group) has no value
    # here: the held-out group takes its relatives' instead.
    for v in s.inert([cid for ids in groups.values() for cid in ids]):
        u.pop(v, None)
    return FitResult(u, value, total)


# variable -> (group, the parameter's fallback attributes) of each of its cases
Seen = dict[Variable, set[tuple[str, tuple[str, ...]]]]


def seen_attributes(params: Sequence[FitParameter], cases: Sequence[Case]) -> Seen:
    """For each variable, the groups of its cases and their fallback attributes."""
    seen: Seen = {}
    for c in cases:
        for i in active(params, c):
            key = tuple(c.attrs.get(a, "") for a in params[i].fallback)
            seen.setdefault(variable_of(params, i, c), set()).add((c.group, key))
    return seen


def values_for(params: Sequence[FitParameter], case: Case, u: dict[Variable, float],
               seen: Seen | None = None, held_out: str | None = None,
               inert: Collection[Variable] = ()) -> tuple[tuple[str, ...], list[str]]:
    """The overrides that give `case` the fitted values. A variable the fit never saw (its scope
    key only in the held-out group) takes the mean, in the interpolation coordinate, of the
    fitted values of its nearest relatives: those whose cases (`seen`, the `held_out` group's
    left out) share the parameter's fallback attributes with `case`, the last attribute dropped
    in turn, then every fitted value of the parameter; a parameter with none keeps the file's
    value, as does an `inert` variable. Returns the overrides and the names of the fallbacks
    used."""
    sets, fallbacks = [], []
    seen = seen or {}
    for i in active(params, case):
        p = params[i]
        v = variable_of(params, i, case)
        if v in inert:
            continue
        if v in u:
            sets.append(p.set(p.value(u[v]), case))
            continue
        others = [(w, x) for w, x in u.items() if w[0] == i]
        for depth in range(len(p.fallback), -1, -1):
            want = tuple(case.attrs.get(a, "") for a in p.fallback[:depth])
            near = [x for w, x in others if not depth or any(
                g != held_out and k[:depth] == want for g, k in seen.get(w, ()))]
            if near:
                which = (f"the same {' and '.join(p.fallback[:depth])}" if depth
                         else "the others")
                sets.append(p.set(p.value(sum(near) / len(near)), case))
                fallbacks.append(f"{p.path}[{'/'.join(v[1])}] = mean of {which}")
                break
        else:
            fallbacks.append(f"{p.path}[{'/'.join(v[1])}] = file value")
    return tuple(sets), fallbacks


@dataclass
class FitReport:
    params: list[FitParameter]
    surrogate: Surrogate
    in_sample: FitResult
    folds: dict[str, FitResult]  # held-out group -> fit on the others
    in_sample_sim: dict[str, float]  # case id -> simulated at the in-sample fit
    logo_sim: dict[str, float]  # case id -> simulated at its fold's fit
    fallbacks: dict[str, list[str]]  # held-out group -> fallbacks used
    # Of the groups with fallbacks: case id -> simulated at the fit on all but that case
    loco_sim: dict[str, float]
    failures: dict[str, str]  # case id -> why it has no grid or no fitted simulation
    simulations: int
    inert: set[Variable] = field(default_factory=set)  # Surrogate.inert: not fitted


def grid_sample(cases: Sequence[Case], every: dict[str, int]) -> list[Case]:
    """The fitted cases that the grid simulates: of a suite in `every`, each group's 1st,
    (k+1)th, (2k+1)th... case in table order; of the others, every case."""
    seen: dict[str, int] = {}
    picked = []
    for c in cases:
        if c.use != "fit":
            continue
        k = every.get(c.suite, 1)
        i = seen.get(c.group, 0)
        seen[c.group] = i + 1
        if i % k == 0:
            picked.append(c)
    return picked


def run_fit(params: Sequence[FitParameter], cases: Sequence[Case], simulate: SimulateMany,
            log: Callable[[str], None] = lambda _: None,
            grid_every: dict[str, int] | None = None) -> FitReport:
    """Grid, surrogate, in-sample fit and leave-one-group-out folds; every reported error comes
    from `simulate` at the fitted values. `grid_every` thins a suite's cases on the grid (the
    fit's objective); every case is still simulated at the in-sample and fold values."""
    params = list(params)
    fit_cases = grid_sample(cases, grid_every or {})
    grids = [case_grid(params, c) for c in fit_cases]
    log(f"grid: {len(fit_cases)} cases, {sum(map(len, grids))} points")
    requests = [(c, overrides) for c, grid_c in zip(fit_cases, grids) for overrides in grid_c]
    results = simulate(requests)
    simulations = len(requests)
    grid: dict[str, list[float]] = {}
    failures: dict[str, str] = {}
    start = 0
    for c, grid_c in zip(fit_cases, grids):
        rs = results[start:start + len(grid_c)]
        start += len(grid_c)
        bad = [r for r in rs if r.step_time_s is None or r.step_time_s <= 0]
        if bad:
            failures[c.id] = f"grid point failed: {bad[0].error}"
        else:
            grid[c.id] = [math.log(r.step_time_s) for r in rs]
    s = Surrogate(params, fit_cases, grid)
    groups: dict[str, list[str]] = {}
    for c in fit_cases:
        if c.id in grid:
            groups.setdefault(c.group, []).append(c.id)
    log(f"fit on {len(groups)} groups")
    # A variable that no case's time depends on has no value to fit: it leaves the surrogate, its
    # cases keep their own value, and it is no held-out group's relative.
    inert = s.inert()
    for v in sorted(inert):
        log(f"{params[v[0]].path}[{'/'.join(v[1])}]: no case's simulated time depends on it; "
            f"not fitted, its cases keep their own value")
    s.drop(inert)
    memo: dict = {}
    in_sample = fit(s, groups, memo=memo)
    folds = {}
    for g in sorted(groups):
        others = {k: v for k, v in groups.items() if k != g}
        folds[g] = fit(s, others, start=in_sample.u, memo=memo)
    log(f"{len(folds)} leave-one-group-out folds fitted")
    requests, owners, fallbacks = [], [], {}
    seen = seen_attributes(params, [c for c in fit_cases if c.id in grid])
    for c in cases:
        sets, _ = values_for(params, c, in_sample.u, seen, inert=inert)
        requests.append((c, sets))
        owners.append(("in", c))
    for c in cases:
        held_out = c.use == "fit" and c.group in folds
        u = folds[c.group].u if held_out else in_sample.u
        sets, fb = values_for(params, c, u, seen, c.group if held_out else None, inert)
        if fb:
            fallbacks.setdefault(c.group, sorted(set(fallbacks.get(c.group, []) + fb)))
        requests.append((c, sets))
        owners.append(("logo", c))
    # A group whose held-out fold fell back has a system of its own (a scoped value no other
    # group shares): LOGO predicts it from other systems' values, which no model can do for a
    # per-system quantity such as the host's time. It is also cross-validated one case at a time:
    # fit on everything but the case, so the rest of its system stays in the fit, and predict
    # the case.
    by_id = {c.id: c for c in cases}
    for g in sorted(fallbacks):
        ids = groups.get(g, [])
        if len(ids) < 2:
            continue
        for cid in ids:
            rest = dict(groups)
            rest[g] = [i for i in ids if i != cid]
            fold = fit(s, rest, start=in_sample.u, memo=memo)
            requests.append((by_id[cid],
                             values_for(params, by_id[cid], fold.u, seen, inert=inert)[0]))
            owners.append(("loco", by_id[cid]))
    log(f"{sum(1 for kind, _ in owners if kind == 'loco')} leave-one-case-out folds fitted; "
        f"simulating at the fitted values")
    results = simulate(requests)
    simulations += len(requests)
    sims: dict[str, dict[str, float]] = {"in": {}, "logo": {}, "loco": {}}
    for (kind, c), r in zip(owners, results):
        if r.step_time_s is None:
            failures.setdefault(c.id, f"fitted simulation failed: {r.error}")
            continue
        sims[kind][c.id] = r.step_time_s
    return FitReport(params, s, in_sample, folds, sims["in"], sims["logo"], fallbacks,
                     sims["loco"], failures, simulations, inert)


# ---------------------------------------------------------------------------------------------
# Report


def pct(x: float | None, width: int = 7) -> str:
    return f"{100 * x:{width}.2f}%" if x is not None else " " * (width - 2) + "n/a"


def rho(x: float | None) -> str:
    return f"{x:+.3f}" if x is not None else "  n/a"


def print_cases(cases: Sequence[Case], base: dict[str, float], errors: dict[str, str],
                fitted: FitReport | None) -> None:
    header = f"{'case':52} {'measured s':>11} {'simulated s':>11} {'error':>8}"
    if fitted:
        header += f" {'in-sample':>9} {'LOGO':>8} {'LOCO':>8}"
    print(header)
    for c in cases:
        if c.id in errors:
            print(f"{c.id:52} {c.measured_s:11.4g}  simulation failed: {errors[c.id]}")
            continue
        line = f"{c.id:52} {c.measured_s:11.4g} {base[c.id]:11.4g} " \
               f"{100 * (base[c.id] / c.measured_s - 1):+7.1f}%"
        if fitted:
            for sim in (fitted.in_sample_sim, fitted.logo_sim, fitted.loco_sim):
                s = sim.get(c.id)
                line += f" {100 * (s / c.measured_s - 1):+8.1f}%" if s else "      n/a"
        print(line)


def group_rows(cases: Sequence[Case], base: dict[str, float], fitted: FitReport | None):
    groups: dict[str, list[Case]] = {}
    for c in cases:
        groups.setdefault(c.group, []).append(c)
    order = sorted(groups, key=lambda g: (list(SUITES).index(groups[g][0].suite), g))
    for g in order:
        members = groups[g]
        row = {"group": g, "suite": members[0].suite, "cases": len(members),
               "use": "score" if all(c.use == "score" for c in members) else "fit",
               "simulated": sum(1 for c in members if c.id in base),
               "baseline_mape": mape((c.measured_s, base[c.id]) for c in members if c.id in base),
               "baseline_spearman": subgroup_spearman(members, base)}
        if fitted:
            row["in_sample_mape"] = mape((c.measured_s, fitted.in_sample_sim[c.id])
                                         for c in members if c.id in fitted.in_sample_sim)
            row["logo_mape"] = mape((c.measured_s, fitted.logo_sim[c.id])
                                    for c in members if c.id in fitted.logo_sim)
            row["in_sample_spearman"] = subgroup_spearman(members, fitted.in_sample_sim)
            row["logo_spearman"] = subgroup_spearman(members, fitted.logo_sim)
            # Only groups of a system of their own have these (run_fit).
            row["loco_mape"] = mape((c.measured_s, fitted.loco_sim[c.id])
                                    for c in members if c.id in fitted.loco_sim)
            row["loco_spearman"] = subgroup_spearman(members, fitted.loco_sim)
            # How far the surrogate is from the simulator at the in-sample fit.
            gaps = [abs(math.exp(fitted.surrogate.predict_log(c.id, fitted.in_sample.u))
                        / fitted.in_sample_sim[c.id] - 1)
                    for c in members if c.id in fitted.surrogate.y and c.id in
                    fitted.in_sample_sim]
            row["surrogate_gap"] = max(gaps) if gaps else None
        yield row


def min_rho(sub: dict[str, tuple[int, float | None]]) -> str:
    values = [r for _, r in sub.values() if r is not None]
    if not sub:
        return "     -"
    return f"{rho(min(values)) if values else '  n/a'} ({len(sub)})"


def print_groups(rows: list[dict], fitted: bool) -> None:
    header = f"{'group':46} {'cases':>5} {'MAPE':>8} {'rho min (n)':>12}"
    if fitted:
        header += f" {'in-sample':>9} {'LOGO':>8} {'rho LOGO (n)':>13} {'surr.gap':>8}" \
                  f" {'LOCO':>8}"
    print(header)
    for r in rows:
        name = r["group"] + (" [score only]" if r["use"] == "score" else "")
        line = f"{name[:46]:46} {r['cases']:5d} {pct(r['baseline_mape'], 8)} " \
               f"{min_rho(r['baseline_spearman']):>12}"
        if fitted:
            line += f" {pct(r['in_sample_mape'], 9)} {pct(r['logo_mape'], 8)} " \
                    f"{min_rho(r['logo_spearman']):>13} {pct(r['surrogate_gap'], 8)}" \
                    f" {pct(r['loco_mape'], 8) if r['loco_mape'] is not None else '       -'}"
        print(line)
    if fitted:
        print("LOCO: of a group whose system no other group shares (its LOGO fold fell back "
              "on other systems' values), each case predicted from a fit on all but that case")


def print_spearman(rows: list[dict], fitted: bool) -> None:
    print(f"{'sub-group (same job, several layouts)':70} {'layouts':>7} {'rho':>7}"
          + (f" {'in-sample':>9} {'LOGO':>7} {'LOCO':>7}" if fitted else ""))
    for r in rows:
        for sub, (n, value) in r["baseline_spearman"].items():
            line = f"{(r['group'] + ': ' + sub)[:70]:70} {n:7d} {rho(value):>7}"
            if fitted:
                line += f" {rho(r['in_sample_spearman'].get(sub, (0, None))[1]):>9}" \
                        f" {rho(r['logo_spearman'].get(sub, (0, None))[1]):>7}"
                if sub in r["loco_spearman"]:
                    line += f" {rho(r['loco_spearman'][sub][1]):>7}"
            print(line)


# A layout measured at several global batches: its step time against its microbatch count.
BATCH_SETS = ("workload.global_batch", "workload.microbatch", "parallelism.dp")


def microbatches(case: Case) -> int | None:
    """Microbatches a step per data-parallel replica, where the case's sets give all three."""
    values = {}
    for s in case.sets:
        path, _, value = s.partition("=")
        if path in BATCH_SETS:
            values[path] = value
    try:
        g, b, dp = (int(values[k]) for k in BATCH_SETS)
    except (KeyError, ValueError):
        return None
    return g // (b * dp) if b * dp > 0 and g % (b * dp) == 0 else None


def least_squares(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Intercept and slope of the line through (xs, ys)."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / \
        sum((x - mx) ** 2 for x in xs)
    return my - slope * mx, slope


def batch_lines(cases: Sequence[Case], simulated: dict[str, float]) -> list[dict]:
    """Per layout (a group's cases equal but for the global batch) measured at >= 2 microbatch
    counts: the least-squares line of the step time against the count, measured and simulated.
    The slope is what one more microbatch costs (the pipeline's slowest stage in steady state);
    the intercept what a step costs besides (pipeline fill and drain, gradient reduction,
    optimizer). Splits a group's error into a per-microbatch and a per-step part."""
    layouts: dict[tuple, list[tuple[int, Case]]] = {}
    for c in cases:
        m = microbatches(c)
        if m is None or c.id not in simulated:
            continue
        rest = tuple(s for s in c.sets if set_path(s) != "workload.global_batch")
        layouts.setdefault((c.group, c.scenario, rest), []).append((m, c))
    lines = []
    for (group, _, rest), members in layouts.items():
        if len({m for m, _ in members}) < 2:
            continue
        counts = [m for m, _ in members]
        mi, ms = least_squares(counts, [c.measured_s for _, c in members])
        si, ss = least_squares(counts, [simulated[c.id] for _, c in members])
        lines.append({"group": group, "layout": list(rest), "microbatches": sorted(counts),
                      "measured_slope_s": ms, "measured_intercept_s": mi,
                      "simulated_slope_s": ss, "simulated_intercept_s": si})
    return lines


def print_batch_lines(lines: Sequence[dict]) -> None:
    groups: dict[str, list[dict]] = {}
    for line in lines:
        groups.setdefault(line["group"], []).append(line)
    print(f"{'group':46} {'layouts':>7} {'slope err':>9} {'|slope err|':>11} "
          f"{'intercept err':>13}")
    for g, members in sorted(groups.items()):
        errs = [m["simulated_slope_s"] / m["measured_slope_s"] - 1 for m in members
                if m["measured_slope_s"] > 0]
        icpt = [m["simulated_intercept_s"] - m["measured_intercept_s"] for m in members]
        mean = sum(errs) / len(errs) if errs else None
        spread = sum(abs(e) for e in errs) / len(errs) if errs else None
        print(f"{g[:46]:46} {len(members):7d} {pct(mean, 9)} {pct(spread, 11)} "
              f"{1e3 * sum(icpt) / len(icpt):+11.1f}ms")


def describe(p: FitParameter) -> str:
    """`path per scope`, with its factor and case filters."""
    def filters(pairs: Sequence[tuple[str, tuple[str, ...]]]) -> str:
        return ", ".join(f"{a} {'|'.join(v)}" for a, v in pairs)

    text = f"{p.path}{' (a factor on the case value)' if p.factor else ''} per " \
           f"{'+'.join(p.scope) or 'all cases'}"
    if p.applies_to:
        text += f", only {filters(p.applies_to)}"
    if p.excludes:
        text += f", except {filters(p.excludes)}"
    return text


def print_fit(report: FitReport, cases: Sequence[Case]) -> None:
    params = report.params
    print("fitted parameters (scope: " + "; ".join(describe(p) for p in params) + ")")
    variables = sorted({v for r in [report.in_sample] + list(report.folds.values()) for v in r.u})

    def name(v: Variable) -> str:
        p = params[v[0]]
        return f"{p.path.rsplit('.', 1)[-1]}{' x' if p.factor else ''}[{'/'.join(v[1]) or 'all'}]"

    print(f"{'fold (held-out group)':40} " + " ".join(f"{name(v):>24}" for v in variables))
    for label, result in [("in-sample (all groups)", report.in_sample)] + \
            sorted(report.folds.items()):
        print(f"{label[:40]:40} " + " ".join(
            f"{params[v[0]].text(params[v[0]].value(result.u[v])) if v in result.u else '-':>24}"
            for v in variables))
    for g, fb in sorted(report.fallbacks.items()):
        print(f"  held out {g}: {'; '.join(fb)}")
    if report.inert:
        print("  no effect on any case's simulated time (not fitted; the cases keep their own "
              "value): " + ", ".join(name(v) for v in sorted(report.inert)))


APPROXIMATIONS = CASES_DIR / "approximations.csv"


def approximation_legend() -> dict[str, dict[str, str]]:
    """The rows of calibration/cases/approximations.csv by code."""
    return {row["code"]: row for _, row in read_csv(APPROXIMATIONS)}


def print_codes(cases: Sequence[Case], legend: dict[str, dict[str, str]]) -> None:
    counts: dict[str, int] = {}
    for c in cases:
        for code in c.approximated:
            counts[code] = counts.get(code, 0) + 1
    print(f"{'code':22} {'cases':>5}  kind: what the measured run does")
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        row = legend.get(code)
        if row is None:
            raise InputError(f"{APPROXIMATIONS}: error: approximation code '{code}' is not "
                             "listed")
        print(f"{code:22} {n:5d}  {row['kind']}: {row['what the measured run does']}")


# ---------------------------------------------------------------------------------------------
# Command line


def default_data() -> Path:
    for parent in REPO.parents:
        if (parent / "shared" / "validation").is_dir():
            return parent / "shared" / "validation"
    return REPO.parent / "shared" / "validation"


def build_release() -> Path:
    for cmd in (["cmake", "--preset", "release"],
                ["cmake", "--build", "--preset", "release", "--target", "prismsim"]):
        p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        if p.returncode != 0:
            raise InputError(f"error: {' '.join(cmd)} failed:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return REPO / "build" / "release" / "simulator" / "prismsim"


def check_cases(binary: Path, cases: Sequence[Case], processes: int) -> int:
    """`prismsim check` on every distinct command; 1 if any is refused."""
    distinct = {}
    for c in cases:
        distinct.setdefault(c.config_key(), c)

    def one(c: Case) -> tuple[Case, int, str]:
        cmd = [str(binary), "check", c.scenario] + [a for s in c.sets for a in ("--set", s)]
        p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        return c, p.returncode, (p.stderr.strip().splitlines() or [""])[0]

    with concurrent.futures.ThreadPoolExecutor(max(1, processes)) as pool:
        results = list(pool.map(one, distinct.values()))
    bad = [(c, rc, msg) for c, rc, msg in results if rc != 0]
    for c, rc, msg in bad:
        print(f"{c.id}: prismsim check exit {rc}: {msg}")
    print(f"{len(results) - len(bad)} of {len(results)} distinct case commands accepted by "
          f"prismsim check")
    return 1 if bad else 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Simulate every measured training configuration of ../shared/validation "
                    "and compare step times; optionally fit parameters with leave-one-group-out "
                    "cross-validation.")
    ap.add_argument("--data", default=str(default_data()),
                    help="the validation data (default: shared/validation in the nearest "
                         "directory above the repository, ../shared/validation for /work/main)")
    ap.add_argument("--prismsim", help="the binary (default: build the release preset)")
    ap.add_argument("--processes", type=int, default=os.cpu_count() or 1,
                    help="simulations at once (default: the number of CPUs)")
    ap.add_argument("--cache", default=str(REPO / "build" / "validation-cache"),
                    help="results by command hash (default build/validation-cache); 'none' "
                         "disables it")
    ap.add_argument("--suites", default=",".join(SUITES),
                    help=f"comma-separated subset of {','.join(SUITES)}")
    ap.add_argument("--groups", help="only groups matching this regular expression")
    ap.add_argument("--fit", nargs="?", const=str(CASES_DIR / "fit.json"),
                    help="fit the parameters of this JSON file (default calibration/cases/"
                         "fit.json) with leave-one-group-out cross-validation")
    ap.add_argument("--param", action="append", default=[],
                    metavar="PATH=MIN:MAX[:SCALE[:POINTS[:SCOPE[:INTERP]]]]",
                    help="a fitted parameter (replaces the file's list; repeatable), e.g. "
                         "platform.gpu.compute.kernel_overhead=1us:200us:log:5:framework:linear")
    ap.add_argument("--list", action="store_true",
                    help="print each case's measured time and prismsim command, then exit")
    ap.add_argument("--check", action="store_true",
                    help="run `prismsim check` on every case's command (no simulation); exit 1 "
                         "if one is refused")
    ap.add_argument("--grid-every", action="append", default=[], metavar="SUITE=K",
                    help="fit on every K-th case of each group of SUITE (repeatable; adds to "
                         "the fit file's grid_every); every case is still simulated and scored "
                         "at the fitted values, e.g. vtrain-single=6")
    ap.add_argument("--set", action="append", default=[], metavar="PATH=VALUE", dest="sets",
                    help="a prismsim --set after each case's own (repeatable), e.g. "
                         "host.layer_syncs=0: the validation of a what-if; not a fitted path")
    ap.add_argument("--quiet", action="store_true", help="no per-case lines")
    ap.add_argument("--json", help="write every figure to this JSON file")
    args = ap.parse_args(argv)

    try:
        suites = [s.strip() for s in args.suites.split(",") if s.strip()]
        for s in suites:
            if s not in SUITES:
                raise InputError(f"error: --suites: unknown suite '{s}' (known: "
                                 f"{', '.join(SUITES)})")
        cases = load_cases(Path(args.data), suites)
        if args.groups:
            cases = [c for c in cases if re.search(args.groups, c.group)]
            if not cases:
                raise InputError(f"error: --groups '{args.groups}' matches no group")
        params: list[FitParameter] = []
        grid_every: dict[str, int] = {}
        if args.param:
            try:
                params = [parse_param(p) for p in args.param]
            except ValueError as e:
                raise InputError(f"error: {e}") from None
        elif args.fit:
            params, grid_every = load_fit_config(Path(args.fit))
        grid_every.update(parse_grid_every(args.grid_every, "--grid-every"))
        fitted = {p.path for p in params}
        for s in args.sets:
            path = set_path(s)
            if "=" not in s or not path:
                raise InputError(f"error: --set '{s}': expected PATH=VALUE")
            if path in fitted:
                raise InputError(f"error: --set '{s}': {path} is fitted "
                                 f"({'--param' if args.param else args.fit}); its values come "
                                 f"from the fit")
        cases = [replace(c, sets=tuple(c.sets) + tuple(args.sets)) for c in cases]
        legend = approximation_legend()
        try:
            check_params(params, cases, set(legend))
        except InputError as e:
            raise InputError(f"{'--param' if args.param else args.fit}: {e}") from None
        if args.list:
            sim_cmd = ["prismsim"]
            for c in cases:
                cmd = " ".join(sim_cmd + ["run", c.scenario] +
                               [f"--set {s}" for s in c.sets])
                print(f"{c.id}\t{c.group}\t{c.use}\t{c.measured_s:.6g}\t"
                      f"{' '.join(c.approximated) or '-'}\t{cmd}")
            return 0
        binary = Path(args.prismsim).resolve() if args.prismsim else build_release()
        if not binary.exists():
            raise InputError(f"error: --prismsim: no file '{binary}'")
        if args.check:
            return check_cases(binary, cases, args.processes)
        cache = None if args.cache == "none" else Path(args.cache)
        sim = Simulator(binary, cache, args.processes, progress=True)
        started = time.monotonic()
        print(f"{len(cases)} cases in {len({c.group for c in cases})} groups; prismsim "
              f"{binary}", file=sys.stderr)
        base_results = sim([(c, ()) for c in cases])
        base = {c.id: r.step_time_s for c, r in zip(cases, base_results)
                if r.step_time_s is not None}
        errors = {c.id: r.error for c, r in zip(cases, base_results) if r.step_time_s is None}
        report = None
        if params:
            report = run_fit(params, cases, sim, log=lambda m: print(m, file=sys.stderr),
                             grid_every=grid_every)
        rows = list(group_rows(cases, base, report))
    except InputError as e:
        print(e, file=sys.stderr)
        return 2

    if not args.quiet:
        print("== per case: measured and simulated step time (error = simulated / measured - 1)")
        print_cases(cases, base, errors, report)
        print()
    print("== per group: MAPE, and the least Spearman rho over its sub-groups of >= 3 layouts "
          "(their count)")
    print_groups(rows, report is not None)
    print()
    print("== Spearman rank correlation per sub-group (one group, GPU count, batch and sequence)")
    print_spearman(rows, report is not None)
    print()
    lines = batch_lines(cases, base)
    if lines:
        print("== per layout measured at several global batches: step time against microbatches "
              "a step (current model; mean over the group's layouts; --json has each)")
        print("slope: the time of one more microbatch, simulated / measured - 1; intercept: "
              "the rest of a step, simulated - measured")
        print_batch_lines(lines)
        print()
    if report:
        print_fit(report, cases)
        for cid, why in sorted(report.failures.items()):
            print(f"  not fitted: {cid}: {why}")
        print()
    print("== approximations of the case mapping (calibration/cases/approximations.csv)")
    print_codes(cases, legend)
    print()
    elapsed = time.monotonic() - started
    fit_rows = [r for r in rows if r["use"] == "fit"]
    print(f"== summary: {len(cases)} cases, {len(errors)} failed to simulate; "
          f"{sim.simulated} simulations run, {sim.cached} from the cache; {elapsed:.0f} s")
    key = "logo_mape" if report else "baseline_mape"
    met = [r for r in fit_rows if r[key] is not None and r[key] <= 0.08]
    rho_key = "logo_spearman" if report else "baseline_spearman"
    rhos = [v for r in fit_rows for _, v in r[rho_key].values() if v is not None]
    print(f"target MAPE <= 8% ({'leave-one-group-out' if report else 'current model'}): "
          f"met by {len(met)} of {len(fit_rows)} fitted groups; Spearman >= 0.9 in "
          f"{sum(1 for v in rhos if v >= 0.9)} of {len(rhos)} sub-groups")
    own = [r for r in fit_rows if report and r["loco_mape"] is not None]
    if own:
        print(f"groups of a system of their own, leave-one-case-out: MAPE <= 8% in "
              f"{sum(1 for r in own if r['loco_mape'] <= 0.08)} of {len(own)}")

    if args.json:
        def sub(d):
            return {k: {"layouts": n, "spearman": v} for k, (n, v) in d.items()}
        out = {"cases": [{"id": c.id, "suite": c.suite, "group": c.group,
                          "subgroup": c.subgroup, "use": c.use, "measured_s": c.measured_s,
                          "simulated_s": base.get(c.id), "error": errors.get(c.id),
                          "in_sample_s": report.in_sample_sim.get(c.id) if report else None,
                          "logo_s": report.logo_sim.get(c.id) if report else None,
                          "loco_s": report.loco_sim.get(c.id) if report else None,
                          "scenario": c.scenario, "sets": list(c.sets),
                          "approximated": list(c.approximated)} for c in cases],
               "groups": [{k: (sub(v) if isinstance(v, dict) else v) for k, v in r.items()}
                          for r in rows],
               "batch_lines": lines,
               "simulations": sim.simulated, "cached": sim.cached}
        if report:
            def named(u):
                return {f"{report.params[v[0]].path}[{'/'.join(v[1])}]":
                        report.params[v[0]].value(x) for v, x in sorted(u.items())}
            out["fit"] = {"parameters": [{k: v for k, v in p.__dict__.items()
                                          if not k.startswith("_")} for p in report.params],
                          "in_sample": named(report.in_sample.u),
                          "folds": {g: named(r.u) for g, r in report.folds.items()},
                          "fallbacks": report.fallbacks, "failures": report.failures,
                          "inert": [f"{report.params[v[0]].path}[{'/'.join(v[1])}]"
                                    for v in sorted(report.inert)]}
        Path(args.json).write_text(json.dumps(out, indent=1, default=list) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
