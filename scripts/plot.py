#!/usr/bin/env python3
"""Plots of prismsim results: distributions of one study, two studies side by side, sweeps,
calibration fits.

usage:
  plot.py cdf OUTDIR [-o FILE.png]
  plot.py compare DIR_A DIR_B [--labels A B] [-o FILE.png]
  plot.py sweep SWEEP.csv --x COLUMN [--series COLUMN] [--metric step_time|job_time]
                [--x-scale auto|linear|log] [-o FILE.png]
  plot.py calibration CALIBRATION.json [--out DIR]
  plot.py training OUTDIR [-o FILE.png]
  plot.py goodput SWEEP.csv --x COLUMN [--series COLUMN] [--x-scale auto|linear|log] [-o FILE.png]

OUTDIR, DIR_A and DIR_B are `prismsim run --out` directories (runs.csv, summary.json);
SWEEP.csv is what `prismsim sweep` writes; CALIBRATION.json is what `prismsim calibrate
--plots DIR` (or --report) writes: calibration draws DIR/calibration-ENTRY.png, a CDF and a
QQ plot of the sample against each fitted family, per fitted entry. Needs only the standard
library and matplotlib (Debian: apt-get install python3-matplotlib); draws with the
non-interactive Agg backend. Prints the path of each PNG it writes. Bad input (a missing
file, directory or column, an empty file, invalid JSON) is reported on stderr with exit
status 2.
"""

import argparse
import csv
import json
import math
import os
import re
import sys

PROG = "plot.py"
QUANTILES = (("p50", 0.50), ("p95", 0.95), ("p99", 0.99))
QUANTILE_COLORS = {"p50": "tab:green", "p95": "tab:orange", "p99": "tab:red"}


class InputError(Exception):
    """Bad input: reported as `plot.py: error: ...` with exit status 2."""


def warn(message):
    print(f"{PROG}: warning: {message}", file=sys.stderr)


# --------------------------------------------------------------------------- statistics


def quantile(sorted_values, q):
    """Linear interpolation between closest ranks, as the simulator computes its percentiles."""
    if not sorted_values:
        return float("nan")
    position = q * (len(sorted_values) - 1)
    below = int(math.floor(position))
    above = min(below + 1, len(sorted_values) - 1)
    fraction = position - below
    return sorted_values[below] + fraction * (sorted_values[above] - sorted_values[below])


def ks_distance(a, b):
    """Two-sample Kolmogorov-Smirnov distance: the largest gap between the empirical CDFs."""
    a, b = sorted(a), sorted(b)
    if not a or not b:
        return float("nan")
    i = j = 0
    distance = 0.0
    while i < len(a) or j < len(b):
        x = a[i] if j == len(b) or (i < len(a) and a[i] <= b[j]) else b[j]
        while i < len(a) and a[i] == x:
            i += 1
        while j < len(b) and b[j] == x:
            j += 1
        distance = max(distance, abs(i / len(a) - j / len(b)))
    return distance


# --------------------------------------------------------------------------- units

TIME_UNITS = (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0), ("min", 60.0), ("h", 3600.0))


def time_unit(values):
    """The unit ("ms", 1e-3) in which the largest of `values` (seconds) reads best."""
    finite = [abs(v) for v in values if v is not None and math.isfinite(v)]
    largest = max(finite) if finite else 1.0
    if largest < 1e-6:
        return TIME_UNITS[0]
    if largest < 1e-3:
        return TIME_UNITS[1]
    if largest < 1.0:
        return TIME_UNITS[2]
    if largest < 600.0:
        return TIME_UNITS[3]
    if largest < 3 * 3600.0:
        return TIME_UNITS[4]
    return TIME_UNITS[5]


def human_seconds(value):
    if value is None or not math.isfinite(value):
        return "n/a"
    name, factor = time_unit([value])
    return f"{value / factor:.4g} {name}"


_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}


def _unit_table():
    """suffix -> (family, factor to the family's base unit), as prismsim reads quantities."""
    table = {}
    for prefix, factor in _PREFIX.items():
        for base in ("bps", "b/s", "bit/s"):
            table[prefix + base] = ("bandwidth_bits", factor)  # bits per second
        for base in ("Bps", "B/s"):
            table[prefix + base] = ("bandwidth_bytes", factor)  # bytes per second
        table[prefix + "B"] = ("size", factor)  # bytes
        for base in ("flops", "flop/s", "FLOPS", "FLOP/s"):
            table[prefix + base] = ("flop_rate", factor)
    for prefix, factor in _BINARY.items():
        table[prefix + "Bps"] = ("bandwidth_bytes", factor)
        table[prefix + "B/s"] = ("bandwidth_bytes", factor)
        table[prefix + "B"] = ("size", factor)
    for name, factor in TIME_UNITS:
        table[name] = ("duration", factor)
    return table


UNITS = _unit_table()
# The units an axis shows, per family, smallest first (the family's base unit has factor 1).
DISPLAY_UNITS = {
    "bandwidth_bits": [("bps", 1.0), ("Kbps", 1e3), ("Mbps", 1e6), ("Gbps", 1e9), ("Tbps", 1e12)],
    "bandwidth_bytes": [("B/s", 1.0), ("KB/s", 1e3), ("MB/s", 1e6), ("GB/s", 1e9), ("TB/s", 1e12)],
    "bandwidth_bytes_binary": [("B/s", 1.0), ("KiB/s", 2.0**10), ("MiB/s", 2.0**20),
                               ("GiB/s", 2.0**30), ("TiB/s", 2.0**40)],
    "size": [("B", 1.0), ("KB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12)],
    "size_binary": [("B", 1.0), ("KiB", 2.0**10), ("MiB", 2.0**20), ("GiB", 2.0**30),
                    ("TiB", 2.0**40)],
    "duration": list(TIME_UNITS),
    "flop_rate": [("flops", 1.0), ("Kflops", 1e3), ("Mflops", 1e6), ("Gflops", 1e9),
                  ("Tflops", 1e12), ("Pflops", 1e15)],
}
_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(\S*)\s*$")


def parse_quantity(text):
    """("100Gbps") -> ("bandwidth_bits", 1e11, "Gbps"); a plain number has family "";
    None when the text is not a number with a known unit."""
    match = _QUANTITY.match(text)
    if not match:
        return None
    number, suffix = float(match.group(1)), match.group(2)
    if not math.isfinite(number):
        return None
    if suffix == "":
        return "", number, ""
    if suffix not in UNITS:
        return None
    family, factor = UNITS[suffix]
    return family, number * factor, suffix


def numeric_axis(texts):
    """Reads a column's values as numbers on one axis.

    Returns (values in the display unit, unit name or "") or None when the values are not
    all quantities of one kind (they are then categories)."""
    parsed = [parse_quantity(t) for t in texts]
    if any(p is None for p in parsed):
        return None
    families = {p[0] for p in parsed if p[0]}
    if families == {"bandwidth_bits", "bandwidth_bytes"}:  # mixed: show everything in bits
        parsed = [("bandwidth_bits", v * 8.0, s) if f == "bandwidth_bytes" else (f, v, s)
                  for f, v, s in parsed]
        families = {"bandwidth_bits"}
    if not families:
        return [p[1] for p in parsed], ""
    if len(families) > 1:
        return None
    family = families.pop()
    # A bare number next to quantities is in the base unit (bytes, seconds, ...), as prismsim
    # reads a bare byte count.
    base = [p[1] for p in parsed]
    suffixes = {p[2] for p in parsed}
    display_family = family
    if family in ("size", "bandwidth_bytes") and any("i" in s for s in suffixes):
        display_family = family + "_binary"
    units = DISPLAY_UNITS[display_family]
    magnitudes = sorted(abs(v) for v in base if v != 0)
    typical = quantile(magnitudes, 0.5) if magnitudes else 1.0
    name, factor = units[0]
    for candidate, candidate_factor in units:
        if typical >= candidate_factor:
            name, factor = candidate, candidate_factor
    return [v / factor for v in base], name


def format_tick(value):
    return f"{value:.4g}"


# --------------------------------------------------------------------------- inputs


def read_csv(path, required, what):
    """Rows of a CSV file as dicts; checks it exists, is not empty and has the columns."""
    if os.path.isdir(path):
        raise InputError(f"'{path}' is a directory, expected {what}")
    if not os.path.isfile(path):
        raise InputError(f"cannot read {what} '{path}': no such file")
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None or not any(cell.strip() for cell in header):
                raise InputError(f"{what} '{path}' is empty")
            header = [cell.strip() for cell in header]
            missing = [c for c in required if c not in header]
            if missing:
                raise InputError(
                    f"{what} '{path}' has no column{'s' if len(missing) > 1 else ''} "
                    f"{', '.join(repr(c) for c in missing)} "
                    f"(columns: {', '.join(header)})")
            rows = []
            for line, cells in enumerate(reader, start=2):
                if not cells or not any(cell.strip() for cell in cells):
                    continue
                if len(cells) != len(header):
                    raise InputError(f"{path}:{line}: expected {len(header)} fields, "
                                     f"found {len(cells)}")
                rows.append((line, dict(zip(header, (cell.strip() for cell in cells)))))
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read {what} '{path}': {error}") from None
    if not rows:
        raise InputError(f"{what} '{path}' has a header but no rows")
    return header, rows


def to_float(text, path, line, column):
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{path}:{line}: '{column}' is not a number: '{text}'") from None
    return value


def optional_float(text):
    """A sweep cell: a number, or None for an empty or non-finite one."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def read_json(path, what):
    """A JSON file holding an object; checks it exists, is not empty and parses."""
    if os.path.isdir(path):
        raise InputError(f"'{path}' is a directory, expected {what}")
    if not os.path.isfile(path):
        raise InputError(f"cannot read {what} '{path}': no such file")
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read {what} '{path}': {error}") from None
    if not text.strip():
        raise InputError(f"{what} '{path}' is empty")
    try:
        value = json.loads(text)
    except ValueError as error:
        raise InputError(f"{what} '{path}' is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise InputError(f"{what} '{path}' is not a JSON object")
    return value


class Study:
    """One `prismsim run --out` directory: its step and job times and its summary."""

    def __init__(self, directory):
        if not os.path.exists(directory):
            raise InputError(f"no such directory: '{directory}'")
        if not os.path.isdir(directory):
            raise InputError(f"'{directory}' is not a directory (expected a prismsim --out "
                             f"directory with runs.csv and summary.json)")
        self.directory = directory
        runs_csv = os.path.join(directory, "runs.csv")
        _, rows = read_csv(runs_csv, ("run", "step", "step_time_s"), "runs file")
        self.summary = self._read_summary(os.path.join(directory, "summary.json"))
        by_run = {}
        self.step_times = []
        for line, row in rows:
            run = row["run"]
            step = to_float(row["step"], runs_csv, line, "step")
            time = to_float(row["step_time_s"], runs_csv, line, "step_time_s")
            by_run.setdefault(run, []).append((step, time))
            self.step_times.append(time)
        full = max(len(steps) for steps in by_run.values())
        self.job_times = [sum(t for _, t in steps) for steps in by_run.values() if len(steps) == full]
        self.runs = len(by_run)
        self.runs_cut_short = self.runs - len(self.job_times)
        self.scenario = self.summary.get("scenario") or os.path.basename(
            os.path.normpath(directory))

    @staticmethod
    def _read_summary(path):
        if not os.path.exists(path):
            warn(f"no summary.json in '{os.path.dirname(path)}': percentiles are computed "
                 f"from runs.csv")
            return {}
        return read_json(path, "summary")

    def values(self, metric):
        return self.step_times if metric == "step_time" else self.job_times

    def percentiles(self, metric):
        """{"p50": (value, (lo, hi) or None), ...}: the summary's, else computed from the data."""
        stats = self.summary.get(metric + "_s")
        stats = stats if isinstance(stats, dict) else {}
        ci = stats.get("ci") if isinstance(stats.get("ci"), dict) else {}
        ordered = sorted(self.values(metric))
        result = {}
        for name, q in QUANTILES:
            value = stats.get(name)
            if not isinstance(value, (int, float)):
                value = quantile(ordered, q)
            interval = ci.get(name)
            if not (isinstance(interval, list) and len(interval) == 2
                    and all(isinstance(v, (int, float)) for v in interval)):
                interval = None
            result[name] = (float(value), interval)
        return result

    def baseline(self, metric):
        baseline = self.summary.get("baseline")
        if not isinstance(baseline, dict):
            return None
        value = baseline.get(metric + "_s")
        if isinstance(value, dict):  # a distribution-shaped entry: its middle
            value = value.get("p50", value.get("mean"))
        return float(value) if isinstance(value, (int, float)) else None

    def deadlines(self):
        """[(deadline_s, probability of missing it or None)]"""
        result = []
        deadlines = self.summary.get("deadlines")
        for item in deadlines if isinstance(deadlines, list) else []:
            if not isinstance(item, dict) or not isinstance(item.get("deadline_s"), (int, float)):
                continue
            p = item.get("p_miss", item.get("p_job_time_exceeds"))
            if not isinstance(p, (int, float)):
                # Not in the summary: the share of completed runs slower than the deadline.
                p = (sum(j > item["deadline_s"] for j in self.job_times) / len(self.job_times)
                     if self.job_times else None)
            result.append((float(item["deadline_s"]), p))
        return result


# --------------------------------------------------------------------------- drawing


def load_pyplot():
    try:
        import matplotlib
    except ImportError:
        raise InputError("matplotlib is not installed for this python3 "
                         "(Debian/Ubuntu: apt-get install python3-matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save(fig, path):
    try:
        fig.savefig(path, dpi=110, metadata={"Software": None})
    except (OSError, ValueError) as error:
        raise InputError(f"cannot write '{path}': {error}") from None
    print(path)


def padded_limits(points):
    """An x range that keeps every marked value in view and a single-valued CDF readable."""
    finite = [p for p in points if p is not None and math.isfinite(p)]
    if not finite:
        return 0.0, 1.0
    low, high = min(finite), max(finite)
    span = high - low
    if span > abs(high) * 1e-6:
        margin = span * 0.06
    else:  # one value, up to rounding: a window of +-1% around it
        margin = abs(high) * 0.01 or 1.0
    return low - margin, high + margin


def draw_cdf(ax, values, factor, limits, **style):
    """The empirical CDF as a staircase: 0 left of the smallest value, 1 from the largest on,
    drawn across the whole x range `limits` (in the display unit)."""
    ordered = sorted(v / factor for v in values)
    n = len(ordered)
    xs = [min(limits[0], ordered[0])] + ordered + [max(limits[1], ordered[-1])]
    ys = [0.0] + [(i + 1) / n for i in range(n)] + [1.0]
    return ax.step(xs, ys, where="post", zorder=3, **style)[0]


LABELS = {"step_time": "step time", "job_time": "job time"}


def cdf_panel(ax, study, metric):
    values = study.values(metric)
    title = LABELS[metric]
    if metric == "job_time" and study.runs_cut_short:
        title += f" ({len(values)} complete runs, {study.runs_cut_short} cut short left out)"
    ax.set_title(title, fontsize=10)
    ax.set_ylabel("fraction of " + ("steps" if metric == "step_time" else "runs") + " ≤ x")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    if not values:
        ax.text(0.5, 0.5, "no complete runs", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlabel(LABELS[metric])
        return
    percentiles = study.percentiles(metric)
    baseline = study.baseline(metric)
    deadlines = study.deadlines() if metric == "job_time" else []
    marks = list(values) + [v for v, _ in percentiles.values()] + [d for d, _ in deadlines]
    marks += [baseline] if baseline is not None else []
    unit, factor = time_unit(marks)
    limits = padded_limits([m / factor for m in marks])
    level = study.summary.get("confidence_intervals", {})
    level = level.get("level", 0.95) if isinstance(level, dict) else 0.95
    draw_cdf(ax, values, factor, limits, color="tab:blue", linewidth=1.6,
             label=f"{len(values)} {'steps' if metric == 'step_time' else 'runs'}")
    for name, (value, interval) in percentiles.items():
        color = QUANTILE_COLORS[name]
        label = f"{name} = {human_seconds(value)}"
        if interval:
            label += f"  ({level * 100:g}% CI {interval[0] / factor:.4g}–{interval[1] / factor:.4g} {unit})"
            if interval[1] > interval[0]:
                ax.axvspan(interval[0] / factor, interval[1] / factor, color=color, alpha=0.12,
                           linewidth=0)
        ax.axvline(value / factor, color=color, linewidth=1.2, label=label)
    for deadline, p in deadlines:
        miss = "n/a" if p is None else f"{p:.3g}"
        ax.axvline(deadline / factor, color="black", linestyle="--", linewidth=1.2,
                   label=f"deadline {human_seconds(deadline)}: P(miss) = {miss}")
    if baseline is not None:
        ax.axvline(baseline / factor, color="tab:purple", linestyle=":", linewidth=1.8,
                   label=f"no-variation baseline = {human_seconds(baseline)}")
    ax.set_xlim(*limits)
    ax.set_xlabel(f"{LABELS[metric]} ({unit})")
    ax.legend(loc="lower right", fontsize=8, framealpha=0.9)


def command_cdf(args):
    study = Study(args.outdir)
    output = args.output or os.path.join(args.outdir, "cdf.png")
    plt = load_pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(14, 5.2))
    cdf_panel(axes[0], study, "step_time")
    cdf_panel(axes[1], study, "job_time")
    runs = study.summary.get("runs", study.runs)
    steps = study.summary.get("steps")
    subtitle = f"{runs} runs" + (f" × {steps} steps" if steps is not None else "")
    fig.suptitle(f"{study.scenario}  ({subtitle})", fontsize=12)
    fig.tight_layout()
    save(fig, output)
    plt.close(fig)


def compare_panel(ax, studies, labels, metric):
    from matplotlib.lines import Line2D

    colors = ("tab:blue", "tab:orange")
    ax.set_title(LABELS[metric], fontsize=10)
    ax.set_ylabel("fraction of " + ("steps" if metric == "step_time" else "runs") + " ≤ x")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    present = [s for s in studies if s.values(metric)]
    if not present:
        ax.text(0.5, 0.5, "no complete runs", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlabel(LABELS[metric])
        return
    marks = []
    for study in present:
        marks += study.values(metric) + [v for v, _ in study.percentiles(metric).values()]
    unit, factor = time_unit(marks)
    limits = padded_limits([m / factor for m in marks])
    handles = []
    for study, label, color in zip(studies, labels, colors):
        values = study.values(metric)
        if not values:
            handles.append(Line2D([], [], color=color, label=f"{label}: no complete runs"))
            continue
        percentiles = study.percentiles(metric)
        text = "  ".join(f"{name} {human_seconds(v)}" for name, (v, _) in percentiles.items())
        handles.append(draw_cdf(ax, values, factor, limits, color=color, linewidth=1.6,
                                label=f"{label} (n={len(values)}): {text}"))
        for name, q in QUANTILES:
            ax.plot([percentiles[name][0] / factor], [q], marker="o", markersize=5,
                    color=color, linestyle="none", zorder=4)
    distance = ks_distance(studies[0].values(metric), studies[1].values(metric))
    ks_text = "n/a" if math.isnan(distance) else f"{distance:.3f}"
    handles.append(Line2D([], [], linestyle="none", label=f"KS distance D = {ks_text}"))
    handles.append(Line2D([], [], linestyle="none", marker="o", color="grey",
                          label="dots: p50, p95, p99"))
    ax.set_xlim(*limits)
    ax.set_xlabel(f"{LABELS[metric]} ({unit})")
    ax.legend(handles=handles, loc="lower right", fontsize=8, framealpha=0.9)


def command_compare(args):
    studies = [Study(args.dir_a), Study(args.dir_b)]
    names = [s.scenario for s in studies]
    if args.labels:
        labels = list(args.labels)
    elif names[0] != names[1]:
        labels = names  # the studies' own names
    else:
        labels = [os.path.basename(os.path.normpath(d)) for d in (args.dir_a, args.dir_b)]
        if labels[0] == labels[1]:
            labels = [os.path.normpath(d) for d in (args.dir_a, args.dir_b)]
    output = args.output or os.path.join(args.dir_a, "compare.png")
    plt = load_pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(14, 5.2))
    compare_panel(axes[0], studies, labels, "step_time")
    compare_panel(axes[1], studies, labels, "job_time")
    if names[0] != names[1]:
        title = f"{names[0]} vs {names[1]}"
        if labels != names:
            title += f"  ({labels[0]} vs {labels[1]})"
    else:
        title = f"{names[0]}: {labels[0]} vs {labels[1]}"
    fig.suptitle(title, fontsize=12)
    fig.tight_layout()
    save(fig, output)
    plt.close(fig)


STATS = ("min", "p50", "p95", "p99", "max")


def swept_columns(header):
    """The swept settings: the columns between `point` and `runs` in what prismsim sweep writes."""
    if "point" in header and "runs" in header and header.index("point") < header.index("runs"):
        return header[header.index("point") + 1:header.index("runs")]
    fixed = {"point", "runs", "runs_completed"}
    return [c for c in header if c not in fixed and not c.startswith(("step_time_", "job_time_"))]


LOG_DECADES = 1.5  # a positive numeric x range wider than this many decades gets a log axis


def choose_x_scale(xs, requested, column):
    """"log" or "linear" for numeric x values: as `requested`, or (auto) log when every value is
    positive and the largest exceeds the smallest by more than LOG_DECADES decades."""
    positive = [x for x in xs if x > 0]
    if requested == "log":
        if len(positive) < len(xs):
            warn(f"'{column}' has values ≤ 0, which a log axis leaves out")
        return "log"
    if requested == "linear" or not xs or len(positive) < len(xs):
        return "linear"
    return "log" if math.log10(max(xs) / min(xs)) > LOG_DECADES else "linear"


def sweep_name(csv_path):
    """The study's name from the sweep.json next to SWEEP.csv, or None."""
    path = os.path.join(os.path.dirname(csv_path) or ".", "sweep.json")
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            name = json.load(handle).get("name")
    except (OSError, ValueError, AttributeError):
        warn(f"cannot read the study's name from '{path}'")
        return None
    return name if isinstance(name, str) and name else None


def sweep_layout(args, header, rows):
    """How a sweep is drawn, decided from the table alone (tested on its own): a dict with
    `kind` ("categorical" or "numeric"), `categories`, `xs`, `x_unit`, `x_scale`, `series`
    ({label: [point]}, each point its x, text, statistics and `baseline`), `by` (the columns
    that split the series), `baseline` ("constant", "per_point" or None), `baseline_value`
    (the constant, in seconds) and `title`."""
    metric = args.metric
    x_texts = [row[args.x] for _, row in rows]
    numeric = numeric_axis(x_texts)
    categories = []
    requested = "log" if args.log_x else args.x_scale
    if numeric is None:
        for text in x_texts:
            if text not in categories:
                categories.append(text)
        xs = [float(categories.index(t)) for t in x_texts]
        x_unit, x_scale = "", "linear"
        if requested == "log":
            warn(f"'{args.x}' holds categories, not numbers: a log axis does not apply")
    else:
        xs, x_unit = numeric
        x_scale = choose_x_scale(xs, requested, args.x)
    has_baseline = metric == "step_time" and "baseline_step_time_s" in header

    def group(by):
        series = {}
        for (_, row), x, text in zip(rows, xs, x_texts):
            label = ", ".join(f"{c} = {row[c]}" for c in by) if len(by) > 1 else (
                row[by[0]] if by else "")
            point = {stat: optional_float(row[f"{metric}_{stat}_s"]) for stat in STATS}
            point["baseline"] = optional_float(row["baseline_step_time_s"]) if has_baseline else None
            point["x"], point["text"] = x, text
            series.setdefault(label, []).append(point)
        for points in series.values():
            points.sort(key=lambda p: p["x"])
        return series

    def shares_x(series):
        return any(len({p["x"] for p in points}) < len(points) for points in series.values())

    by = [args.series] if args.series else []
    series = group(by)
    if shares_x(series):
        # Another swept setting varies too: one series per combination rather than a zigzag.
        others = [c for c in swept_columns(header) if c not in by and c != args.x
                  and len({row[c] for _, row in rows}) > 1]
        if others:
            warn(f"several rows share a value of '{args.x}': one series per value of "
                 f"{', '.join(others)} too (pick the one to compare with --series)")
            by += others
            series = group(by)
        else:
            warn(f"several rows share a value of '{args.x}'")
    baselines = [p["baseline"] for points in series.values() for p in points
                 if p["baseline"] is not None]
    baseline, baseline_value = None, None
    if baselines:
        low, high = min(baselines), max(baselines)
        if high - low <= 1e-9 * abs(high):
            baseline, baseline_value = "constant", high
        else:
            baseline = "per_point"
    name = sweep_name(args.csv)
    title = f"{LABELS[metric]} against {args.x}"
    if name:
        title = f"{name}: {title}"
    return {"kind": "numeric" if numeric is not None else "categorical",
            "categories": categories, "xs": xs, "x_unit": x_unit, "x_scale": x_scale,
            "series": series, "by": by, "baseline": baseline,
            "baseline_value": baseline_value, "title": title}


def command_sweep(args):
    metric = args.metric
    columns = [f"{metric}_{stat}_s" for stat in STATS]
    required = [args.x] + ([args.series] if args.series else []) + columns
    header, rows = read_csv(args.csv, required, "sweep file")
    layout = sweep_layout(args, header, rows)
    series, by, categories = layout["series"], layout["by"], layout["categories"]
    categorical = layout["kind"] == "categorical"
    ys = [p[s] for points in series.values() for p in points for s in STATS if p[s] is not None]
    if not ys:
        raise InputError(f"sweep file '{args.csv}' has no {LABELS[metric]} values "
                         f"(no point completed a run{'' if metric == 'step_time' else ' in full'})")
    ys += [p["baseline"] for points in series.values() for p in points if p["baseline"]]
    y_unit, factor = time_unit(ys)

    plt = load_pyplot()
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig, ax = plt.subplots(figsize=(10, 6))
    colors = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["tab:blue"])
    series_handles = []
    # Categories: each series' points side by side around the category's position.
    width = min(0.35, 0.7 / max(1, len(series)))
    for index, (key, points) in enumerate(series.items()):
        color = colors[index % len(colors)]
        offset = (index - (len(series) - 1) / 2) * width if categorical else 0.0

        def column(stat, points=points):
            kept = [p for p in points if p[stat] is not None]
            return [p["x"] + offset for p in kept], [p[stat] / factor for p in kept]

        if categorical:
            # Points and bars, never lines: the order of categories means nothing.
            for p in points:
                x = p["x"] + offset
                if p["min"] is not None and p["max"] is not None:
                    ax.vlines(x, p["min"] / factor, p["max"] / factor, color=color,
                              linewidth=1, alpha=0.6)
                if p["p50"] is not None and p["p95"] is not None:
                    ax.bar(x, (p["p95"] - p["p50"]) / factor, bottom=p["p50"] / factor,
                           width=width * 0.8, color=color, alpha=0.28, linewidth=0)
            ax.plot(*column("p99"), color=color, marker="_", markersize=14, linestyle="none",
                    markeredgewidth=1.6)
            line = ax.plot(*column("p50"), color=color, marker="o", markersize=6,
                           linestyle="none")[0]
        else:
            band = [p for p in points if p["min"] is not None and p["max"] is not None]
            ax.fill_between([p["x"] for p in band], [p["min"] / factor for p in band],
                            [p["max"] / factor for p in band], color=color, alpha=0.08,
                            linewidth=0)
            band = [p for p in points if p["p50"] is not None and p["p95"] is not None]
            ax.fill_between([p["x"] for p in band], [p["p50"] / factor for p in band],
                            [p["p95"] / factor for p in band], color=color, alpha=0.28,
                            linewidth=0)
            ax.plot(*column("p99"), color=color, linestyle="--", linewidth=1.2)
            line = ax.plot(*column("p50"), color=color, marker="o", linewidth=1.8,
                           markersize=5)[0]
        if layout["baseline"] == "per_point":
            kept = [p for p in points if p["baseline"] is not None]
            bx = [p["x"] + offset for p in kept]
            by_values = [p["baseline"] / factor for p in kept]
            if categorical:
                ax.plot(bx, by_values, color="tab:purple", marker="_", markersize=18,
                        linestyle="none", markeredgewidth=2)
            else:
                ax.plot(bx, by_values, color="tab:purple", linestyle=":", linewidth=1.8)
        if by:
            line.set_label(f"{by[0]} = {key}" if len(by) == 1 else key)
            series_handles.append(line)
        missing = [p["text"] for p in points if p["p50"] is None]
        if missing:
            where = f" ({by[0]} = {key})" if len(by) == 1 else (f" ({key})" if by else "")
            warn(f"no {LABELS[metric]} at {args.x} = {', '.join(missing)}{where}: left out")

    style_color = "dimgray" if by else colors[0]
    if categorical:
        style_handles = [
            Line2D([], [], color=style_color, marker="o", linestyle="none", label="p50"),
            Patch(facecolor=style_color, alpha=0.28, label="p50–p95"),
            Line2D([], [], color=style_color, marker="_", markersize=14, linestyle="none",
                   markeredgewidth=1.6, label="p99"),
            Line2D([], [], color=style_color, linewidth=1, alpha=0.6, label="min–max"),
        ]
    else:
        style_handles = [
            Line2D([], [], color=style_color, marker="o", linewidth=1.8, label="p50"),
            Patch(facecolor=style_color, alpha=0.28, label="p50–p95"),
            Line2D([], [], color=style_color, linestyle="--", linewidth=1.2, label="p99"),
            Patch(facecolor=style_color, alpha=0.08, label="min–max"),
        ]
    if layout["baseline"] == "constant":
        value = layout["baseline_value"]
        ax.axhline(value / factor, color="tab:purple", linestyle=":", linewidth=1.8)
        style_handles.append(Line2D([], [], color="tab:purple", linestyle=":", linewidth=1.8,
                                    label=f"no-variation baseline = {human_seconds(value)}"))
    elif layout["baseline"] == "per_point":
        style_handles.append(Line2D([], [], color="tab:purple",
                                    linestyle="none" if categorical else ":",
                                    marker="_" if categorical else None, markersize=18,
                                    linewidth=1.8, label="no-variation baseline"))
    if series_handles:
        legend = ax.legend(handles=series_handles, loc="upper left", fontsize=9,
                           title=by[0] if len(by) == 1 else None, title_fontsize=9)
        ax.add_artist(legend)
        ax.legend(handles=style_handles, loc="upper right", fontsize=9)
    else:
        ax.legend(handles=style_handles, loc="best", fontsize=9)

    if categorical:
        ax.set_xticks(range(len(categories)))
        ax.set_xticklabels(categories, rotation=30 if len(categories) > 6 else 0,
                           ha="right" if len(categories) > 6 else "center")
        ax.set_xlim(-0.5, len(categories) - 0.5)
    else:
        log = layout["x_scale"] == "log"
        if log:
            ax.set_xscale("log")
        distinct = sorted(set(layout["xs"]))
        if len(distinct) <= 12:  # mark the swept values themselves
            shown = [x for x in distinct if x > 0] if log else distinct
            ax.set_xticks(shown)
            ax.set_xticklabels([format_tick(x) for x in shown])
            ax.minorticks_off()
    x_unit = layout["x_unit"]
    ax.set_xlabel(args.x + (f" ({x_unit})" if x_unit else "")
                  + (", log scale" if layout["x_scale"] == "log" else ""))
    ax.set_ylabel(f"{LABELS[metric]} ({y_unit})")
    ax.grid(True, alpha=0.3)
    ax.set_title(layout["title"], fontsize=11)
    fig.tight_layout()
    output = args.output or os.path.join(os.path.dirname(args.csv), f"sweep-{metric}.png")
    save(fig, output)
    plt.close(fig)


FAMILY_COLORS = {"normal": "tab:blue", "lognormal": "tab:orange", "gamma": "tab:green"}


def number_list(value, where):
    if not isinstance(value, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise InputError(f"{where} is not a list of numbers")
    return [float(v) for v in value]


def calibration_fit(fit, where):
    """A FIT object of calibration.json, checked: its quantile lists all as long as its
    probabilities."""
    if not isinstance(fit, dict):
        raise InputError(f"{where}: 'fit' is not a JSON object")
    probabilities = number_list(fit.get("probabilities"), f"{where}: 'probabilities'")
    quantiles = number_list(fit.get("quantiles"), f"{where}: 'quantiles'")
    if len(quantiles) != len(probabilities):
        raise InputError(f"{where}: {len(quantiles)} quantiles for {len(probabilities)} "
                         f"probabilities")
    families = fit.get("families", [])
    if not isinstance(families, list) or not all(isinstance(f, dict) for f in families):
        raise InputError(f"{where}: 'families' is not a list of objects")
    checked = []
    for family in families:
        name = str(family.get("family", "?"))
        values = number_list(family.get("quantiles"), f"{where}: family {name}: 'quantiles'")
        if len(values) != len(probabilities):
            raise InputError(f"{where}: family {name} has {len(values)} quantiles for "
                             f"{len(probabilities)} probabilities")
        ks = family.get("ks")
        checked.append((name, ks if isinstance(ks, (int, float)) else None, values))
    # The chosen distribution when it is none of the families (a family plus its measured tail).
    chosen = str(fit.get("chosen", "?"))
    if fit.get("chosen_quantiles") is not None and chosen not in [c[0] for c in checked] \
            and chosen not in ("empirical", "constant"):
        values = number_list(fit["chosen_quantiles"], f"{where}: 'chosen_quantiles'")
        if len(values) != len(probabilities):
            raise InputError(f"{where}: {len(values)} chosen quantiles for {len(probabilities)} "
                             f"probabilities")
        ks = fit.get("ks")
        checked.append((chosen, ks if isinstance(ks, (int, float)) else None, values))
    samples = fit.get("samples")
    return {"samples": samples if isinstance(samples, int) else len(quantiles),
            "chosen": chosen, "probabilities": probabilities,
            "quantiles": quantiles, "families": checked}


def calibration_figure(plt, entry, fit):
    fig, (cdf_ax, qq_ax) = plt.subplots(1, 2, figsize=(13, 5.2))
    probabilities, sample = fit["probabilities"], fit["quantiles"]
    cdf_ax.plot(sample, probabilities, drawstyle="steps-post", color="black", linewidth=1.6,
                zorder=4, label=f"sample ({fit['samples']} samples)")
    qq = list(sample)
    for index, (family, ks, values) in enumerate(fit["families"]):
        chosen = family == fit["chosen"]
        style = {"color": FAMILY_COLORS.get(family, f"C{index + 3}"),
                 "linewidth": 2.8 if chosen else 1.3, "zorder": 3 if chosen else 2}
        label = f"{family}  KS {'n/a' if ks is None else f'{ks:.4f}'}" + (
            "  (chosen)" if chosen else "")
        cdf_ax.plot(values, probabilities, label=label, **style)
        qq_ax.plot(values, sample, marker="o", markersize=3, label=label, **style)
        qq += values
    low, high = padded_limits(qq)
    cdf_ax.set_xlim(low, high)
    cdf_ax.set_ylim(0, 1.02)
    cdf_ax.set_title("CDF", fontsize=10)
    cdf_ax.set_xlabel("slowdown (× nominal)")
    cdf_ax.set_ylabel("fraction of samples ≤ x")
    cdf_ax.legend(loc="lower right", fontsize=8, framealpha=0.9)
    qq_ax.plot([low, high], [low, high], color="grey", linestyle="--", linewidth=1,
               label="y = x")
    qq_ax.set_xlim(low, high)
    qq_ax.set_ylim(low, high)
    qq_ax.set_title("QQ", fontsize=10)
    qq_ax.set_xlabel("fitted quantile")
    qq_ax.set_ylabel("sample quantile")
    qq_ax.legend(loc="upper left", fontsize=8, framealpha=0.9)
    for ax in (cdf_ax, qq_ax):
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"{entry}  ({fit['samples']} samples, chosen: {fit['chosen']})", fontsize=12)
    fig.tight_layout()
    return fig


def command_calibration(args):
    path = args.json
    data = read_json(path, "calibration file")
    entries = data.get("entries")
    if not isinstance(entries, list):
        raise InputError(f"calibration file '{path}' has no 'entries' list (expected what "
                         f"`prismsim calibrate --report` or `--plots` writes)")
    fits = []
    for item in entries:
        if not isinstance(item, dict) or not isinstance(item.get("entry"), str):
            raise InputError(f"calibration file '{path}': an entry without an 'entry' name")
        if item.get("fit") is not None:
            where = f"calibration file '{path}', entry '{item['entry']}'"
            fits.append((item["entry"], calibration_fit(item["fit"], where)))
    spatial = data.get("spatial")
    if isinstance(spatial, dict) and spatial.get("per_gpu") is not None:
        where = f"calibration file '{path}', spatial.per_gpu"
        fits.append(("gpus.per_gpu", calibration_fit(spatial["per_gpu"], where)))
    drawn = [(e, f) for e, f in fits if f["families"] and f["probabilities"]]
    if not drawn:
        warn(f"nothing to draw in '{path}': no entry has fitted families")
        return
    left_out = [e for e, f in fits if not (f["families"] and f["probabilities"])]
    if left_out:
        warn(f"not drawn, no fitted families (a constant sample): {', '.join(left_out)}")
    directory = args.out or os.path.dirname(path) or "."
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        raise InputError(f"cannot create '{directory}': {error}") from None
    plt = load_pyplot()
    for entry, fit in drawn:
        fig = calibration_figure(plt, entry, fit)
        name = re.sub(r"[^A-Za-z0-9_-]", "-", entry)
        save(fig, os.path.join(directory, f"calibration-{name}.png"))
        plt.close(fig)


# --------------------------------------------------------------------------- command line


class Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


# --------------------------------------------------------------------------- whole runs

CAUSES = ("checkpoint", "lost_work", "detection", "restart", "waiting_for_spares", "slow",
          "reduced_replicas")
DAY = 86400.0


def duration_unit(values):
    """("d", 86400) or a shorter unit, for durations of up to weeks."""
    finite = [abs(v) for v in values if v is not None and math.isfinite(v)]
    largest = max(finite) if finite else 1.0
    if largest >= 2 * DAY:
        return "d", DAY
    return time_unit(finite)


def command_training(args):
    """The training-time CDF of a whole run and where the wall time went."""
    if not os.path.isdir(args.outdir):
        raise InputError(f"no such directory: '{args.outdir}'")
    summary = read_json(os.path.join(args.outdir, "summary.json"), "summary")
    training = summary.get("training")
    if not isinstance(training, dict):
        raise InputError(f"'{args.outdir}/summary.json' has no 'training' section (the scenario "
                         f"has no simulation.train)")
    path = os.path.join(args.outdir, "training.csv")
    _, rows = read_csv(path, ("finished", "wall_s", "goodput", "work_steps"), "training file")
    until = "training_time_s" not in training
    if until:
        values = [to_float(r["work_steps"], path, line, "work_steps") for line, r in rows]
        unit, factor, label = "steps", 1.0, "full-size steps of work done"
    else:
        values = [to_float(r["wall_s"], path, line, "wall_s") for line, r in rows
                  if r["finished"] == "1"]
        if not values:
            raise InputError(f"'{path}' has no finished replication")
        unit, factor = duration_unit(values)
        label = "total training time"
    output = args.output or os.path.join(args.outdir, "training.png")
    plt = load_pyplot()
    fig, (ax, bars) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [3, 2]})
    ordered = sorted(values)
    marks = ordered + [d["deadline_s"] for d in training.get("deadlines", [])
                       if not until and isinstance(d.get("deadline_s"), (int, float))]
    if not until and isinstance(training.get("failure_free_s"), (int, float)):
        marks.append(training["failure_free_s"])
    limits = [x / factor for x in padded_limits(marks)]
    draw_cdf(ax, values, factor, limits, color="tab:blue", linewidth=1.8,
             label=f"{len(values)} replications")
    for name, q in QUANTILES:
        value = quantile(ordered, q)
        ax.axvline(value / factor, color=QUANTILE_COLORS[name], linestyle=":", linewidth=1.2,
                   label=f"{name} {value / factor:.4g} {unit}")
    for d in training.get("deadlines", []) if not until else []:
        ax.axvline(d["deadline_s"] / factor, color="black", linestyle="--", linewidth=1,
                   label=f"deadline {d['deadline_s'] / factor:.4g} {unit}: "
                         f"P(finished) {d['p_finish']:.3g}")
    if not until and isinstance(training.get("failure_free_s"), (int, float)):
        ax.axvline(training["failure_free_s"] / factor, color="gray", linewidth=1,
                   label=f"without failures {training['failure_free_s'] / factor:.4g} {unit}")
    ax.set_xlim(*limits)
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.set_xlabel(f"{label} ({unit})")
    ax.set_ylabel("fraction of replications ≤ x")
    goodput = training.get("goodput", {}).get("mean")
    ax.set_title(f"{summary.get('scenario', '')}: {label}"
                 + (f", goodput {goodput:.4f}" if isinstance(goodput, (int, float)) else ""),
                 fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    fractions = training.get("fraction_by_cause", {})
    shares = [100 * float(fractions.get(c, 0)) for c in CAUSES]
    bars.barh(range(len(CAUSES)), shares, color="tab:red", alpha=0.7)
    for i, share in enumerate(shares):
        bars.text(share, i, f" {share:.2f}%", va="center", fontsize=8)
    bars.set_yticks(range(len(CAUSES)))
    bars.set_yticklabels([c.replace("_", " ") for c in CAUSES])
    bars.invert_yaxis()
    bars.set_xlim(0, max(shares + [0.1]) * 1.3)
    bars.set_xlabel("share of the mean wall time (%)")
    bars.set_title("where the wall time went, besides useful training", fontsize=10)
    bars.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    save(fig, output)


def command_goodput(args):
    """Goodput of whole runs against a swept setting (e.g. the checkpoint interval)."""
    required = [args.x] + ([args.series] if args.series else []) + [
        "goodput_mean", "goodput_p50", "goodput_min"]
    _, rows = read_csv(args.csv, required, "sweep file")
    texts = [row[args.x] for _, row in rows]
    numeric = numeric_axis(texts)
    requested = "log" if args.log_x else args.x_scale
    if numeric is None:
        categories = list(dict.fromkeys(texts))
        xs, x_unit, x_scale = [float(categories.index(t)) for t in texts], "", "linear"
    else:
        categories = []
        xs, x_unit = numeric
        x_scale = choose_x_scale(xs, requested, args.x)
    series = {}
    for (_, row), x in zip(rows, xs):
        key = row[args.series] if args.series else ""
        series.setdefault(key, []).append(
            (x, optional_float(row["goodput_mean"]), optional_float(row["goodput_p50"]),
             optional_float(row["goodput_min"]), optional_float(row.get("young_interval_s", ""))))
    if all(p[1] is None for points in series.values() for p in points):
        raise InputError(f"sweep file '{args.csv}' has no goodput values (its scenario has no "
                         f"simulation.train)")
    output = args.output or os.path.join(os.path.dirname(os.path.abspath(args.csv)),
                                         "goodput.png")
    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=(10, 6))
    colors = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["tab:blue"])
    for index, (key, points) in enumerate(series.items()):
        points.sort()
        color = colors[index % len(colors)]
        kept = [p for p in points if p[1] is not None]
        label = f"{args.series} = {key}" if args.series else "mean"
        # Categories are points, never joined: their order means nothing.
        joined = {"linestyle": "none"} if categories else {}
        ax.plot([p[0] for p in kept], [p[1] for p in kept], marker="o", color=color,
                linewidth=1.8, label=label, **joined)
        ax.plot([p[0] for p in kept], [p[3] for p in kept], color=color, linestyle=":",
                linewidth=1, label=None if args.series else "min over replications",
                **({"linestyle": "none", "marker": "_", "markersize": 12} if categories else {}))
    young = [p[4] for points in series.values() for p in points if p[4]]
    if young and x_unit in [u for u, _ in TIME_UNITS] and len(set(young)) == 1:
        factor = dict(TIME_UNITS)[x_unit]
        ax.axvline(young[0] / factor, color="gray", linestyle="--", linewidth=1,
                   label=f"Young's interval {young[0] / factor:.4g} {x_unit}")
    if categories:
        ax.set_xticks(range(len(categories)))
        ax.set_xticklabels(categories)
    else:
        log = x_scale == "log"
        if log:
            ax.set_xscale("log")
        distinct = sorted({x for x in xs if x > 0 or not log})
        if len(distinct) <= 12:  # mark the swept values themselves
            ax.set_xticks(distinct)
            ax.set_xticklabels([format_tick(x) for x in distinct])
            ax.minorticks_off()
    ax.set_xlabel(args.x + (f" ({x_unit})" if x_unit else "")
                  + (", log scale" if x_scale == "log" else ""))
    ax.set_ylabel("goodput (useful training time / wall time)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=9, loc="best")
    name = sweep_name(args.csv)
    ax.set_title((f"{name}: " if name else "") + f"goodput against {args.x}", fontsize=11)
    fig.tight_layout()
    save(fig, output)


def parse_args(argv):
    parser = Parser(prog=PROG, description="Plots of prismsim results (PNG, matplotlib Agg).")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    commands.required = True

    cdf = commands.add_parser(
        "cdf", help="CDFs of step and job times of one `prismsim run --out` directory",
        description="Empirical CDFs of step times and job times, with p50/p95/p99, deadlines "
                    "and the no-variation baseline when the summary has them.")
    cdf.add_argument("outdir", metavar="OUTDIR", help="directory with runs.csv and summary.json")
    cdf.add_argument("-o", "--output", metavar="FILE.png", help="default: OUTDIR/cdf.png")
    cdf.set_defaults(run=command_cdf)

    compare = commands.add_parser(
        "compare", help="two studies' CDFs overlaid, with the KS distance",
        description="Step-time and job-time CDFs of two studies overlaid; the legend gives "
                    "each one's p50/p95/p99 and the two-sample Kolmogorov-Smirnov distance.")
    compare.add_argument("dir_a", metavar="DIR_A")
    compare.add_argument("dir_b", metavar="DIR_B")
    compare.add_argument("--labels", nargs=2, metavar=("A", "B"),
                         help="legend names (default: the scenarios' names, else the "
                              "directory names)")
    compare.add_argument("-o", "--output", metavar="FILE.png", help="default: DIR_A/compare.png")
    compare.set_defaults(run=command_compare)

    sweep = commands.add_parser(
        "sweep", help="a metric against a swept setting (from `prismsim sweep`)",
        description="p50, p50..p95, p99 and min..max of a metric against the values of one "
                    "swept setting: lines and bands for numbers, points and bars for "
                    "categories; the no-variation baseline (step time) as a dotted line; the "
                    "study's name (sweep.json) in the title.")
    sweep.add_argument("csv", metavar="SWEEP.csv")
    sweep.add_argument("--x", required=True, metavar="COLUMN", help="the swept setting on x")
    sweep.add_argument("--series", metavar="COLUMN", help="one line per value of this column")
    sweep.add_argument("--metric", choices=("step_time", "job_time"), default="step_time")
    sweep.add_argument("--x-scale", choices=("auto", "linear", "log"), default="auto",
                       help="x axis of a numeric setting (default auto: log when its values "
                            f"are positive and span more than {LOG_DECADES} decades)")
    sweep.add_argument("--log-x", action="store_true", help="the same as --x-scale log")
    sweep.add_argument("-o", "--output", metavar="FILE.png",
                       help="default: sweep-METRIC.png next to SWEEP.csv")
    sweep.set_defaults(run=command_sweep)

    training = commands.add_parser(
        "training", help="training-time CDF and time by cause of a whole run (simulation.train)",
        description="The CDF of the total training time over the replications (work done, "
                    "for an `until` run) with p50/p95/p99, deadlines and the failure-free time, "
                    "and the share of the wall time each cause took.")
    training.add_argument("outdir", metavar="OUTDIR",
                          help="directory with training.csv and summary.json")
    training.add_argument("-o", "--output", metavar="FILE.png", help="default: OUTDIR/training.png")
    training.set_defaults(run=command_training)

    goodput = commands.add_parser(
        "goodput", help="goodput of whole runs against a swept setting (from `prismsim sweep`)",
        description="Mean goodput (line) and its minimum over replications (dotted) against "
                    "one swept setting, e.g. resilience.checkpoint.interval; Young's interval "
                    "marked when the x axis is a duration.")
    goodput.add_argument("csv", metavar="SWEEP.csv")
    goodput.add_argument("--x", required=True, metavar="COLUMN")
    goodput.add_argument("--series", metavar="COLUMN", help="one line per value of this column")
    goodput.add_argument("--x-scale", choices=("auto", "linear", "log"), default="auto",
                         help="x axis of a numeric setting (default auto: log when its values "
                              f"are positive and span more than {LOG_DECADES} decades)")
    goodput.add_argument("--log-x", action="store_true", help="the same as --x-scale log")
    goodput.add_argument("-o", "--output", metavar="FILE.png",
                         help="default: goodput.png next to SWEEP.csv")
    goodput.set_defaults(run=command_goodput)

    calibration = commands.add_parser(
        "calibration", help="CDF and QQ plots of the fits of `prismsim calibrate`",
        description="One PNG per fitted entry of a calibration.json (prismsim calibrate "
                    "--plots or --report): the sample's CDF against each fitted family's, "
                    "with its KS distance, and a QQ plot of each family against the sample.")
    calibration.add_argument("json", metavar="CALIBRATION.json")
    calibration.add_argument("--out", metavar="DIR",
                             help="where the PNGs go (default: next to CALIBRATION.json)")
    calibration.set_defaults(run=command_calibration)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        args.run(args)
    except InputError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
