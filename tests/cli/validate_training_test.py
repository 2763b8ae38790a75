#!/usr/bin/env python3
"""The fitting code of scripts/validate-training.py on synthetic data with known parameters: a
fake simulator of known form stands in for prismsim, the grid, surrogate, fit and
leave-one-group-out folds must recover the parameters it was given.
usage: validate_training_test.py [SCRIPT]   (default: scripts/validate-training.py of this repo)
"""

import importlib.util
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "scripts" / "validate-training.py"
spec = importlib.util.spec_from_file_location("validate_training", SCRIPT)
vt = importlib.util.module_from_spec(spec)
sys.modules["validate_training"] = vt
spec.loader.exec_module(vt)

failures = []
checks = 0


def check(name, ok, detail=""):
    global checks
    checks += 1
    if not ok:
        failures.append(f"{name}: {detail}")


def near(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def check_refusal(name, call, refused, where):
    """`call` raises InputError with `where: error:` if and only if `refused`."""
    try:
        call()
        check(name, not refused, "accepted")
    except vt.InputError as e:
        check(name, refused and f"{where}: error:" in str(e), str(e))


# --- interpolation weights -----------------------------------------------------------------
nodes = [0.0, 1.0, 3.0]
for x in (-0.5, 0.3, 2.2, 3.0):
    w = vt.lagrange_weights(nodes, x)
    value = sum(wi * (2 * n * n - n + 1) for wi, n in zip(w, nodes))
    check(f"lagrange reproduces a quadratic at {x}", near(value, 2 * x * x - x + 1, 1e-12),
          f"{value}")
    check(f"lagrange weights sum to 1 at {x}", near(sum(w), 1.0, 1e-12))
even = [0.0, 1.0, 2.0, 3.0, 4.0]
for x in (0.0, 0.4, 1.0, 2.7, 3.5, 4.0):
    w = vt.spline_weights(even, x)
    check(f"spline reproduces a line at {x}", near(sum(wi * (3 * n - 2) for wi, n in zip(w, even)),
                                                   3 * x - 2, 1e-12))
    check(f"spline weights sum to 1 at {x}", near(sum(w), 1.0, 1e-12))
check("spline through its nodes", vt.spline_weights(even, 2.0) == [0.0, 0.0, 1.0, 0.0, 0.0],
      f"{vt.spline_weights(even, 2.0)}")
w = vt.spline_weights(even, 1.5)
check("spline reproduces a quadratic inside", near(sum(wi * n * n for wi, n in zip(w, even)),
                                                  2.25, 1e-12))
w = vt.linear_weights(nodes, 2.0)
check("linear weights between the 2nd and 3rd node", w == [0.0, 0.5, 0.5], f"{w}")
check("linear weights at the first node", vt.linear_weights(nodes, 0.0) == [1.0, 0.0, 0.0])

# --- statistics ----------------------------------------------------------------------------
check("spearman of a monotone map", vt.spearman([1, 2, 3, 4], [10, 20, 25, 100]) == 1.0)
check("spearman of a reversed order", vt.spearman([1, 2, 3], [3, 2, 1]) == -1.0)
check("ranks average ties", vt.ranks([5, 1, 5, 2]) == [3.5, 1.0, 3.5, 2.0])
check("spearman with ties", near(vt.spearman([1, 2, 3, 4], [1, 2, 2, 3]), 0.9486832980505138,
                                 1e-12))
check("spearman needs 3 points", vt.spearman([1, 2], [1, 2]) is None)
check("spearman without spread", vt.spearman([1, 2, 3], [4, 4, 4]) is None)
check("mape", near(vt.mape([(1.0, 1.1), (2.0, 1.8)]), 0.1, 1e-12))

# --- parameter specs -----------------------------------------------------------------------
p = vt.parse_param("platform.gpu.compute.kernel_overhead=1us:200us:log:5:framework+gpu:linear")
check("parse_param fields", (p.lo, p.hi, p.unit, p.points, p.scope, p.interpolation)
      == (1.0, 200.0, "us", 5, ("framework", "gpu"), "linear"), f"{p}")
check("parameter text", p.set(72.28) == "platform.gpu.compute.kernel_overhead=72.28us")
check("log grid", [round(p.value(u), 6) for u in p.nodes()][0] == 1.0
      and near(p.value(p.nodes()[-1]), 200.0, 1e-12))
for bad in ("x=1:2:cubic", "x=2:1", "x=1us:2ms", "x=1", "x=0:1:log", "x=1:2:log:1"):
    try:
        vt.parse_param(bad)
        check(f"parse_param refuses '{bad}'", False, "accepted")
    except ValueError:
        check(f"parse_param refuses '{bad}'", True)

# The bundled fit file loads, with its grid thinning; bad thinning is refused.
params, every = vt.load_fit_config(ROOT / "calibration" / "cases" / "fit.json")
check("fit.json loads", len(params) >= 1 and all(k in vt.SUITES for k in every), f"{every}")
check("grid_every parses", vt.parse_grid_every(["vtrain-single=6"], "x") == {"vtrain-single": 6})
for bad in ("vtrain-single=0", "nosuite=2", "vtrain-single", "vtrain-single=x"):
    try:
        vt.parse_grid_every([bad], "x")
        check(f"grid_every refuses '{bad}'", False, "accepted")
    except vt.InputError:
        check(f"grid_every refuses '{bad}'", True)

# A Megatron CI case's approximation codes follow its model_config.yaml: deterministic mode.
for det, codes, ok in ((True, ["ci-deterministic"], True), (False, [], True),
                       (True, [], False), (False, ["ci-deterministic"], False)):
    args = {"--deterministic-mode": "true"} if det else {}
    check_refusal(f"check_ci_case deterministic={det} codes={codes}",
                  lambda: vt.check_ci_case("c", [], codes, args, "t.csv:2"), not ok, "t.csv:2")

# ... and its gradient accumulation: --no-gradient-accumulation-fusion is Megatron's hook
# (main_grad), the default the fused wgrad GEMM.
no_fusion = {"--no-gradient-accumulation-fusion": "true"}
for args, sets, ok in ((no_fusion, ["parallelism.gradient_accumulation=main_grad"], True),
                       ({}, [], True), (no_fusion, [], False),
                       ({}, ["parallelism.gradient_accumulation=main_grad"], False)):
    check_refusal(f"check_ci_case accumulation args={args} sets={sets}",
                  lambda: vt.check_ci_case("c", sets, [], args, "t.csv:2"), not ok, "t.csv:2")

# Context parallelism names its framework's K/V exchange: Transformer Engine's ring or
# torchtitan's ring attention; none without CP.
for cp, framework, codes, ok in ((2, "megatron-lm", ["te-cp-ring"], True),
                                 (2, "torchtitan", ["ring-attention"], True),
                                 (1, "nemo", [], True), (2, "nemo", [], False),
                                 (2, "torchtitan", ["te-cp-ring"], False),
                                 (1, "megatron-lm", ["te-cp-ring"], False)):
    check_refusal(f"check_cp_code cp={cp} {framework} {codes}",
                  lambda: vt.check_cp_code("c", cp, framework, codes, "t.csv:3"), not ok, "t.csv:3")

# A throughput row's layout is the measured table's; replacing it takes the code
# layout-from-recipe, and the code takes a replacement.
RECIPE = ["parallelism.pp=4", "parallelism.schedule=interleaved"]
for sets, codes, ok in ((RECIPE, ["layout-from-recipe"], True), ([], [], True),
                        (["workload.fp8_gemms=true"], [], True),
                        (RECIPE, [], False), (["workload.microbatch=1"], ["fp8"], False),
                        ([], ["layout-from-recipe"], False),
                        (["workload.fp8_gemms=true"], ["layout-from-recipe"], False)):
    check_refusal(f"check_layout_override {sets} {codes}",
                  lambda: vt.check_layout_override("c", sets, codes, "t.csv:4"), not ok, "t.csv:4")

# A replaced layout lands where the source's was: the command equals the row's that states it.
stated = ["parallelism.pp=4", "workload.microbatch=1", "parallelism.schedule=interleaved",
          "parallelism.virtual_stages=5", "workload.fp8_gemms=true"]
replaced = vt.merge_sets(["parallelism.pp=1", "workload.microbatch=2"],
                         ["workload.fp8_gemms=true", "parallelism.pp=4", "workload.microbatch=1",
                          "parallelism.schedule=interleaved", "parallelism.virtual_stages=5"])
check("merge_sets puts a replaced layout in the source's place", replaced == stated, str(replaced))
check("merge_sets keeps a row without layout settings as before",
      vt.merge_sets(["parallelism.pp=2"], ["workload.fp8_gemms=true"])
      == ["parallelism.pp=2", "workload.fp8_gemms=true"])

# --- synthetic cases -----------------------------------------------------------------------
EFF = "platform.gpu.compute.gemm_efficiency"
KO = "platform.gpu.compute.kernel_overhead"


def make_cases(form):
    """Five groups over two GPU types and two frameworks; each case a compute part F (s at
    efficiency 1) and a host part N (kernels), so the two parameters are identifiable."""
    cases = []
    layout = [("g1", "A", "f"), ("g2", "A", "f"), ("g3", "B", "f"), ("g4", "B", "g"),
              ("g5", "A", "g")]
    for gi, (g, gpu, fw) in enumerate(layout):
        for k in range(6):
            f = 0.02 * (1 + k) * (1 + gi)
            n = 200 * (6 - k) * (1 + (gi % 2))
            cases.append(vt.Case(id=f"{g}:{k}", suite="throughput", group=g,
                                 subgroup=f"{g} job", measured_s=0.0, scenario="none",
                                 sets=(f"work={f}", f"kernels={n}"),
                                 attrs={"gpu": gpu, "framework": fw, "suite": "throughput",
                                        "group": g}))
    return cases


def fake_simulator(form, calls):
    def simulate(requests):
        out = []
        for case, extra in requests:
            calls.append(1)
            values = dict(s.split("=", 1) for s in case.sets + tuple(extra))
            eff, _ = vt.parse_value(values[EFF])
            ko, unit = vt.parse_value(values[KO])
            ko *= {"us": 1e-6, "ms": 1e-3, "": 1.0}[unit]
            f, n = float(values["work"]), float(values["kernels"])
            out.append(vt.Result(form(f, n, eff, ko)))
        return out
    return simulate


TRUE = {("A",): 0.71, ("B",): 0.52, ("f",): 23e-6, ("g",): 61e-6}


def truth_sets(case):
    return (f"{EFF}={TRUE[(case.attrs['gpu'],)]}", f"{KO}={TRUE[(case.attrs['framework'],)] * 1e6}us")


def run(form, params, tolerance_param, tolerance_logo, label):
    cases = make_cases(form)
    calls = []
    simulate = fake_simulator(form, calls)
    measured = simulate([(c, truth_sets(c)) for c in cases])
    for c, r in zip(cases, measured):
        c.measured_s = r.step_time_s
    calls.clear()
    report = vt.run_fit(params, cases, simulate)
    points = len(vt.grid_points(params))
    check(f"{label}: simulations = grid + in-sample + folds",
          len(calls) == len(cases) * points + 2 * len(cases) and report.simulations == len(calls),
          f"{len(calls)} calls, {report.simulations} reported")
    for (i, key), u in sorted(report.in_sample.u.items()):
        got = params[i].value(u)
        want = TRUE[key]
        want = want * 1e6 if params[i].unit == "us" else want
        check(f"{label}: in-sample {params[i].path}[{key[0]}]", near(got, want, tolerance_param),
              f"fitted {got:.6g}, true {want:.6g}")
    worst_in = max(abs(report.in_sample_sim[c.id] / c.measured_s - 1) for c in cases)
    check(f"{label}: in-sample simulated error", worst_in <= tolerance_logo, f"{worst_in:.3g}")
    # Every group's scopes are also seen in other groups, except g4's framework 'g', which
    # g5 shares, and g3's GPU 'B', which g4 shares: no fold needs a fallback.
    check(f"{label}: no fallback", report.fallbacks == {}, f"{report.fallbacks}")
    for c in cases:
        err = abs(report.logo_sim[c.id] / c.measured_s - 1)
        if err > tolerance_logo:
            check(f"{label}: LOGO error of {c.id}", False, f"{err:.3g}")
            break
    else:
        check(f"{label}: LOGO errors", True)
    # Surrogate equals the simulator on the grid.
    c = cases[0]
    for point in vt.grid_points(params)[:4]:
        u = {vt.variable_of(params, i, c): params[i].nodes()[j] for i, j in enumerate(point)}
        exact = simulate([(c, vt.grid_overrides(params, point))])[0].step_time_s
        got = math.exp(report.surrogate.predict_log(c.id, u))
        check(f"{label}: surrogate at grid point {point}", near(got, exact, 1e-6),
              f"{got} vs {exact}")
    # The objective, summed case by case over the nonzero grid weights, is the sum over groups
    # of each group's mean squared log error of the surrogate: checked away from the optimum,
    # between grid points (spline weights partly zero, Lagrange weights all nonzero).
    groups = {}
    for c in cases:
        groups.setdefault(c.group, []).append(c)
    s = report.surrogate
    u = {v: params[v[0]].u_lo + (0.31 + 0.17 * k) * (params[v[0]].u_hi - params[v[0]].u_lo)
         for k, v in enumerate(sorted(report.in_sample.u))}
    brute = sum(sum((s.predict_log(c.id, u) - math.log(c.measured_s)) ** 2 for c in members)
                / len(members) for members in groups.values())
    got = vt.objective(s, vt.build_cells(s, {g: [c.id for c in m] for g, m in groups.items()}), u)
    check(f"{label}: objective = sum of the groups' mean squared log errors",
          brute > 1e-6 and near(got, brute, 1e-9), f"{got} vs {brute}")
    return cases, report


eff_param = vt.param_from_dict({"path": EFF, "min": "0.3", "max": "0.95", "scale": "log",
                                "points": 3, "scope": ["gpu"]})
ko_param = vt.param_from_dict({"path": KO, "min": "1us", "max": "1000us", "scale": "log",
                               "points": 7, "scope": ["framework"], "interpolation": "spline"})

# A power law: log T is linear in both log coordinates, so the surrogate is exact and the fit
# must recover the parameters to the optimiser's precision.
run(lambda f, n, eff, ko: f ** 0.5 * n ** 0.3 * eff ** -(0.3 + f) * (ko / 1e-5) ** (0.2 + f),
    [eff_param, ko_param], 1e-4, 1e-4, "power law")

# The shape of a step: compute at the efficiency plus host time per kernel. The surrogate is
# only approximate: parameters within 3%, simulated errors within 1%.
run(lambda f, n, eff, ko: f / eff + n * ko, [eff_param, ko_param], 0.03, 0.01, "compute + host")

# An unseen scope: with a single group on framework 'h', that group's fold cannot fit its
# kernel overhead and takes the mean of the others.
cases = make_cases(None)
for c in cases:
    if c.group == "g5":
        c.attrs["framework"] = "h"
TRUE[("h",)] = 40e-6
form = lambda f, n, eff, ko: f / eff + n * ko  # noqa: E731
simulate = fake_simulator(form, [])
for c, r in zip(cases, simulate([(c, truth_sets(c)) for c in cases])):
    c.measured_s = r.step_time_s
report = vt.run_fit([eff_param, ko_param], cases, simulate)
fb = report.fallbacks.get("g5", [])
check("unseen scope: fallback reported", any("kernel_overhead[h]" in x and "mean" in x for x in fb),
      f"{report.fallbacks}")
sets, used = vt.values_for([eff_param, ko_param], cases[-1], report.folds["g5"].u)
ko_f = ko_param.value(report.folds["g5"].u[(1, ("f",))])
ko_g = ko_param.value(report.folds["g5"].u[(1, ("g",))])
ko_set = [s for s in sets if s.startswith(KO)][0]
check("unseen scope: geometric mean of the others",
      near(vt.parse_value(ko_set.split("=")[1])[0], math.sqrt(ko_f * ko_g), 1e-5),
      f"{ko_set} vs {math.sqrt(ko_f * ko_g)}")
own = {c.id for c in cases if c.group in ("g4", "g5")}  # g4 is now framework 'g' alone
check("unseen scope: LOCO for the groups whose folds fell back",
      set(report.fallbacks) == {"g4", "g5"} and set(report.loco_sim) == own,
      f"{sorted(report.fallbacks)}, {sorted(report.loco_sim)}")

# ...and they are cross-validated one case at a time, the rest of their system in the fit. One
# case of g5 measured 20% slow: held out, it is predicted at its true time (the other five set
# the host's time); in sample, it pulls the fit (a fold that reused the in-sample fit would
# show that).
truth = {c.id: r.step_time_s for c, r in zip(cases, simulate([(c, truth_sets(c)) for c in cases]))}
outlier = next(c for c in cases if c.group == "g5")
outlier.measured_s = 1.2 * truth[outlier.id]
calls = []
simulate = fake_simulator(form, calls)
report = vt.run_fit([eff_param, ko_param], cases, simulate)
points = len(vt.grid_points([eff_param, ko_param]))
check("LOCO: simulations = grid + in-sample + folds + one per case of g4 and g5",
      len(calls) == len(cases) * points + 2 * len(cases) + len(own), f"{len(calls)} calls")
err = report.loco_sim[outlier.id] / truth[outlier.id] - 1
check("LOCO: the outlier held out is predicted at its true time", abs(err) <= 0.01, f"{err:.3g}")
err = report.in_sample_sim[outlier.id] / truth[outlier.id] - 1
check("LOCO: the outlier's fold is not the in-sample fit", err > 0.02, f"{err:.3g}")
worst = max(abs(report.loco_sim[c.id] / c.measured_s - 1) for c in cases if c.group == "g4")
check("LOCO: g4's cases within 1%", worst <= 0.01, f"{worst:.3g}")
rows = {r["group"]: r for r in vt.group_rows(cases, truth, report)}
check("LOCO: a MAPE for g4 and g5 only",
      all((r["loco_mape"] is not None) == (g in ("g4", "g5")) for g, r in rows.items()),
      f"{ {g: r['loco_mape'] for g, r in rows.items()} }")

# A GPU no other group runs, held out, takes its nearest relatives' values (the parameter's
# `fallback` attributes, the last dropped in turn): GPUs A and D and the lone C are one die X,
# B and E one die each. g5 (C, framework g) takes D's efficiency (die X and framework g: g2);
# g1 (A, framework f): no other GPU of die X ran f, so the mean of D's and C's (die X); g3
# (E, die Z alone): the mean of all the others.
cases = make_cases(None)
for c in cases:
    gpu, fw = {"g1": ("A", "f"), "g2": ("D", "g"), "g3": ("E", "f"), "g4": ("B", "g"),
               "g5": ("C", "g")}[c.group]
    c.attrs.update(gpu=gpu, framework=fw, die={"B": "Y", "E": "Z"}.get(gpu, "X"))
TRUE.update({("C",): 0.66, ("D",): 0.61, ("E",): 0.58})
simulate = fake_simulator(form, [])
for c, r in zip(cases, simulate([(c, truth_sets(c)) for c in cases])):
    c.measured_s = r.step_time_s
eff_related = vt.param_from_dict({"path": EFF, "min": "0.3", "max": "0.95", "scale": "log",
                                  "points": 3, "scope": ["gpu"], "fallback": ["die", "framework"]})
report = vt.run_fit([eff_related, ko_param], cases, simulate)


def fold_efficiency(group):
    case = next(c for c in cases if c.group == group)
    seen = vt.seen_attributes([eff_related, ko_param], cases)
    sets, used = vt.values_for([eff_related, ko_param], case, report.folds[group].u, seen, group)
    return vt.parse_value([s for s in sets if s.startswith(EFF)][0].split("=")[1])[0], used


u5 = report.folds["g5"].u
got, used = fold_efficiency("g5")
check("fallback: same die and framework",
      near(got, eff_related.value(u5[(0, ("D",))]), 1e-5)
      and any("gemm_efficiency[C] = mean of the same die and framework" in x for x in used),
      f"{got} vs D's {eff_related.value(u5[(0, ('D',))])}; {used}")
u1 = report.folds["g1"].u
want = eff_related.value((u1[(0, ("D",))] + u1[(0, ("C",))]) / 2)
got, used = fold_efficiency("g1")
check("fallback: the same die where no GPU of it ran the framework",
      near(got, want, 1e-5) and any("gemm_efficiency[A] = mean of the same die" in x
                                    and "framework" not in x for x in used),
      f"{got} vs {want}; {used}")
u3 = report.folds["g3"].u
effs = [x for (i, _), x in u3.items() if i == 0]
want = eff_related.value(sum(effs) / len(effs))
got, used = fold_efficiency("g3")
check("fallback: the others where no GPU shares the die",
      len(effs) == 4 and near(got, want, 1e-5)
      and any("gemm_efficiency[E] = mean of the others" in x for x in used),
      f"{got} vs {want} over {len(effs)}; {used}")
# The held-out group's own cases never make a GPU its relative: D is seen with die X and
# framework g only through g5's cases (as if g5 ran two GPUs), so g5 held out takes A (die X).
case5 = next(c for c in cases if c.group == "g5")
u = {(0, ("A",)): math.log(0.5), (0, ("D",)): math.log(0.8), (1, ("g",)): math.log(5e-5)}
seen = {(0, ("A",)): {("g1", ("X", "f"))}, (0, ("D",)): {("g5", ("X", "g"))}}
for held, want_eff in (("g5", 0.5), (None, 0.8)):
    sets, _ = vt.values_for([eff_related, ko_param], case5, u, seen, held)
    got = vt.parse_value([s for s in sets if s.startswith(EFF)][0].split("=")[1])[0]
    check(f"fallback: relatives without the held-out group's cases ({held})",
          near(got, want_eff, 1e-5), f"{got} vs {want_eff}")
check("fallback: reported per group", any("same die and framework" in x
                                          for x in report.fallbacks.get("g5", [])),
      f"{report.fallbacks}")
try:
    vt.check_params([vt.param_from_dict({"path": EFF, "min": "0.3", "max": "0.95",
                                         "fallback": ["rack"]})], cases, set())
    check("fallback: an attribute the cases lack is refused", False, "accepted")
except vt.InputError as e:
    check("fallback: an attribute the cases lack is refused",
          "fallback attribute 'rack'" in str(e), str(e))
try:
    vt.param_from_dict({"path": EFF, "min": "0.3", "max": "0.95", "fallback": "die"})
    check("fallback: a list of attributes only", False, "accepted")
except ValueError as e:
    check("fallback: a list of attributes only", "fallback must be a list" in str(e), str(e))
TRUE.pop(("C",)), TRUE.pop(("D",)), TRUE.pop(("E",))

# A thinned grid: every second case of each group on the grid, every case still simulated at
# the in-sample and fold values; the power law is exact on any subset of its cases.
cases = make_cases(None)
form = lambda f, n, eff, ko: f ** 0.5 * n ** 0.3 * eff ** -(0.3 + f) * (ko / 1e-5) ** 0.2  # noqa: E731
calls = []
simulate = fake_simulator(form, calls)
for c, r in zip(cases, simulate([(c, truth_sets(c)) for c in cases])):
    c.measured_s = r.step_time_s
calls.clear()
picked = vt.grid_sample(cases, {"throughput": 2})
check("grid sample: cases 0, 2, 4 of each group",
      [c.id for c in picked][:3] == ["g1:0", "g1:2", "g1:4"] and len(picked) == len(cases) // 2,
      f"{[c.id for c in picked]}")
report = vt.run_fit([eff_param, ko_param], cases, simulate, grid_every={"throughput": 2})
points = len(vt.grid_points([eff_param, ko_param]))
check("thinned grid: simulations = sample x grid + in-sample + folds",
      len(calls) == len(picked) * points + 2 * len(cases), f"{len(calls)} calls")
check("thinned grid: every case scored in sample and held out",
      all(c.id in report.in_sample_sim and c.id in report.logo_sim for c in cases))
worst = max(abs(report.logo_sim[c.id] / c.measured_s - 1) for c in cases)
check("thinned grid: LOGO errors of unsampled cases", worst <= 1e-3, f"{worst:.3g}")

# --- parameters that apply to some cases ---------------------------------------------------
# Cases coded 'q' run part of their work at a peak they set themselves (10 units) that reaches
# only 0.8 of it: a factor fitted on them alone, one value for both GPUs; the host's time does
# not apply to the coded cases of g2 (excludes), which keep their file's 30 us.
PEAK = "peak"
cases = make_cases(None)
for c in cases:
    if c.id.endswith((":1", ":4")):
        c.approximated = ("q",)
        c.sets = c.sets + (f"{PEAK}=10Pflops",)
host_free = lambda c: c.group == "g2" and "q" in c.approximated  # noqa: E731
peak_param = vt.param_from_dict({"path": PEAK, "factor": True, "min": "0.5", "max": "1",
                                 "scale": "log", "points": 3,
                                 "applies_to": {"approximated": ["q"]}})
ko_some = vt.param_from_dict({"path": KO, "min": "1us", "max": "1000us", "scale": "log",
                              "points": 7, "scope": ["framework"], "interpolation": "spline",
                              "excludes": {"group": ["g2"], "approximated": ["q"]}})
check("applies_to: only coded cases", [peak_param.applies(c) for c in cases[:3]]
      == [False, True, False])
check("excludes: the cases where both its pairs hold",
      [c.id for c in cases if not ko_some.applies(c)] == ["g2:1", "g2:4"],
      f"{[c.id for c in cases if not ko_some.applies(c)]}")


def factor_form(values):
    eff, _ = vt.parse_value(values[EFF])
    ko, unit = vt.parse_value(values.get(KO, "30us"))
    ko *= {"us": 1e-6, "ms": 1e-3, "": 1.0}[unit]
    peak = vt.parse_value(values[PEAK])[0] / 10 if PEAK in values else 1.0
    f, n = float(values["work"]), float(values["kernels"])
    return f / eff * (0.5 + 0.5 / peak) + n * ko


def factor_simulator(calls):
    def simulate(requests):
        calls.extend(1 for _ in requests)
        return [vt.Result(factor_form(dict(s.split("=", 1) for s in case.sets + tuple(extra))))
                for case, extra in requests]
    return simulate


def factor_truth(case):
    sets = [truth_sets(case)[0]]
    if not host_free(case):
        sets.append(truth_sets(case)[1])
    if "q" in case.approximated:
        sets.append(f"{PEAK}=8Pflops")
    return tuple(sets)


calls = []
simulate = factor_simulator(calls)
for c, r in zip(cases, simulate([(c, factor_truth(c)) for c in cases])):
    c.measured_s = r.step_time_s
calls.clear()
params = [eff_param, ko_some, peak_param]
vt.check_params(params, cases, {"q"})
check("case grid: a coded case of g1 has 3 x 7 x 3 points",
      len(vt.case_grid(params, cases[1])) == 63)
grid = vt.case_grid(params, cases[7])  # g2:1, coded: every parameter but the host's
check("case grid: a coded case of g2 has 3 x 3 points", len(grid) == 9, f"{len(grid)}")
check("case grid: the factor scales the case's own value",
      [s for s in grid[1] if s.startswith(PEAK)] == [f"{PEAK}=7.07107Pflops"], f"{grid[1]}")
check("case grid: a plain case has 3 x 7 points", len(vt.case_grid(params, cases[0])) == 21)
report = vt.run_fit(params, cases, simulate)
sizes = sum(len(vt.case_grid(params, c)) for c in cases)
check("filtered grid: simulations = case grids + in-sample + folds",
      len(calls) == sizes + 2 * len(cases), f"{len(calls)} calls, {sizes} grid points")
r = report.in_sample.u.get((2, ()))
check("factor fitted on the coded cases", r is not None and near(peak_param.value(r), 0.8, 0.03),
      f"{r and peak_param.value(r)}")
sets, _ = vt.values_for(params, next(c for c in cases if host_free(c)), report.in_sample.u)
check("an excluded case keeps the file's host time",
      not any(s.startswith(KO) for s in sets) and any(s.startswith(PEAK) for s in sets), f"{sets}")
worst = max(abs(report.logo_sim[c.id] / c.measured_s - 1) for c in cases)
check("filtered fit: LOGO errors", worst <= 0.01, f"{worst:.3g}")

# A parameter that no case's model reads is inert: a kernel efficiency ATT that only framework
# 'f' uses (framework 'g' runs no such kernel, as unfused attention runs none of the attention
# kernel class). ATT[g] is reported, not fitted: no fitted value, no override for g's cases, no
# relative's value for a held-out key; ATT[f] is fitted.
ATT = "platform.gpu.compute.attention_efficiency"
att_param = vt.param_from_dict({"path": ATT, "min": "0.3", "max": "0.9", "scope": ["framework"]})
g5_alone = make_cases(None)
for c in g5_alone:
    if c.group == "g5":
        c.attrs["framework"] = "h"  # held out, ATT[h] takes the mean of the others: of f alone


def att_simulator(calls):
    def simulate(requests):
        out = []
        for case, extra in requests:
            calls.append(1)
            values = dict(s.split("=", 1) for s in case.sets + tuple(extra))
            eff = vt.parse_value(values[EFF])[0]
            att = vt.parse_value(values.get(ATT, "0.5"))[0]
            f, n = float(values["work"]), float(values["kernels"])
            reads = case.attrs["framework"] != "g"
            out.append(vt.Result(f / eff + (n * 1e-4 / att if reads else n * 2e-4)))
        return out
    return simulate


att_true = {"f": 0.62, "g": 0.5, "h": 0.62}
calls = []
simulate = att_simulator(calls)
att_truth = [(c, (truth_sets(c)[0], f"{ATT}={att_true[c.attrs['framework']]}"))
             for c in g5_alone]
for c, r in zip(g5_alone, simulate(att_truth)):
    c.measured_s = r.step_time_s
report = vt.run_fit([eff_param, att_param], g5_alone, simulate)
check("inert: ATT[g] found, ATT[f] and ATT[h] not",
      report.inert == {(1, ("g",))}, f"{report.inert}")
check("inert: no fitted value for ATT[g] in sample or in a fold",
      all((1, ("g",)) not in r.u for r in [report.in_sample] + list(report.folds.values())))
fitted_f = report.in_sample.u.get((1, ("f",)))
check("inert: ATT[f] fitted", fitted_f is not None and near(att_param.value(fitted_f), 0.62, 0.03),
      f"{fitted_f and att_param.value(fitted_f)}")
sets, _ = vt.values_for([eff_param, att_param], next(c for c in g5_alone if c.group == "g4"),
                        report.in_sample.u, inert=report.inert)
check("inert: a case of framework g keeps its own ATT", not any(s.startswith(ATT) for s in sets),
      f"{sets}")
fold = report.folds["g5"].u
sets, fb = vt.values_for([eff_param, att_param], next(c for c in g5_alone if c.group == "g5"),
                         fold, inert=report.inert)
got = [vt.parse_value(s.split("=")[1])[0] for s in sets if s.startswith(ATT)]
check("inert: held out, ATT[h] is the mean of the fitted values only (f's)",
      len(got) == 1 and near(got[0], att_param.value(fold[(1, ("f",))]), 1e-5), f"{sets} {fb}")
worst = max(abs(report.logo_sim[c.id] / c.measured_s - 1) for c in g5_alone)
check("inert: LOGO errors", worst <= 0.02, f"{worst:.3g}")
gaps = [r["surrogate_gap"] for r in vt.group_rows(g5_alone, {c.id: c.measured_s for c in g5_alone},
                                                  report)]
check("inert: the surrogate's gap at the fit, without a value for ATT[g]",
      all(g is not None and g < 0.02 for g in gaps), f"{gaps}")
check("inert: no held-out group's fallback names ATT[g]",
      not any("attention_efficiency[g]" in x for fb in report.fallbacks.values() for x in fb),
      f"{report.fallbacks}")
# The same with the inert parameter on the slowest axis (the first parameter).
swapped = vt.run_fit([att_param, eff_param], g5_alone, simulate)
check("inert: found on the first axis too", swapped.inert == {(0, ("g",))}, f"{swapped.inert}")
check("inert: the same fit whatever the parameters' order",
      all(near(swapped.in_sample.u[(1 - i, k)], x, 1e-6)
          for (i, k), x in report.in_sample.u.items()), f"{swapped.in_sample.u}")
# One ATT for every case: read by frameworks f and h, not g, so not inert. Held out, g1 (f)
# still leaves readers; g5 (h) too. With only g5 reading it (f's cases made to ignore it), g5's
# fold has no value for it and g5 keeps its own (no relative: the file's value).
att_all = vt.param_from_dict({"path": ATT, "min": "0.3", "max": "0.9"})
report = vt.run_fit([eff_param, att_all], g5_alone, simulate)
check("shared: read by some cases, not inert", report.inert == set(), f"{report.inert}")
for c in g5_alone:
    if c.attrs["framework"] == "f":
        c.attrs["framework"] = "g"
report = vt.run_fit([eff_param, att_all], g5_alone, simulate)
check("read by one group: its fold has no value for it",
      report.inert == set() and (1, ()) in report.in_sample.u
      and (1, ()) not in report.folds["g5"].u and (1, ()) in report.folds["g1"].u,
      f"{report.inert} {sorted(report.folds['g5'].u)}")
check("read by one group: held out, it keeps its own value",
      any("attention_efficiency[] = file value" in x for x in report.fallbacks.get("g5", [])),
      f"{report.fallbacks}")

# Refused: a factor on a case that does not set its path, an unknown code or attribute, a
# factor with a unit, a filter that is not a map of lists.
plain = make_cases(None)[0]
plain.approximated = ("q",)
for name, call in (
        ("a factor on a case without the path",
         lambda: vt.check_params([peak_param], [plain], {"q"})),
        ("an unknown code", lambda: vt.check_params([peak_param], cases, {"r"})),
        ("an unknown attribute", lambda: vt.check_params(
            [vt.param_from_dict({"path": KO, "min": "1us", "max": "2us",
                                 "applies_to": {"rack": ["7"]}})], cases, {"q"}))):
    try:
        call()
        check(f"check_params refuses {name}", False, "accepted")
    except vt.InputError as e:
        check(f"check_params refuses {name}", str(e).startswith("error: "), str(e))
for bad in ({"path": PEAK, "min": "0.5us", "max": "1us", "factor": True},
            {"path": PEAK, "min": "0.5", "max": "1", "factor": "yes"},
            {"path": PEAK, "min": "0.5", "max": "1", "applies_to": {"approximated": "q"}},
            {"path": PEAK, "min": "0.5", "max": "1", "excludes": ["q"]}):
    try:
        vt.param_from_dict(bad)
        check(f"param_from_dict refuses {bad}", False, "accepted")
    except ValueError:
        check(f"param_from_dict refuses {bad}", True)

# --- per-microbatch lines: a layout's step time against its microbatch count ----------------
def batch_case(cid, group, gb, mb, dp, tp, measured):
    return vt.Case(id=cid, suite="vtrain-single", group=group, subgroup="s", measured_s=measured,
                   scenario="x.yaml", sets=(f"parallelism.gpus={dp * tp}",
                                            f"workload.global_batch={gb}",
                                            f"workload.microbatch={mb}", f"parallelism.tp={tp}",
                                            f"parallelism.dp={dp}"), attrs={})


# Layout A (tp 1, dp 2, mb 2): measured 0.03 + 0.010 m, simulated 0.05 + 0.008 m, m = 2, 4, 8.
line_cases, line_sim = [], {}
for gb in (8, 16, 32):
    m = gb // 4
    c = batch_case(f"a{gb}", "G", gb, 2, 2, 1, 0.03 + 0.010 * m)
    line_cases.append(c)
    line_sim[c.id] = 0.05 + 0.008 * m
# Layout B (tp 2): one microbatch count only, not a line; a case without its batch sets: skipped.
line_cases.append(batch_case("b", "G", 8, 2, 2, 2, 1.0))
line_sim["b"] = 1.0
bare = vt.Case(id="n", suite="throughput", group="G", subgroup="s", measured_s=1.0,
               scenario="x.yaml", sets=("parallelism.tp=2",), attrs={})
line_cases.append(bare)
line_sim["n"] = 1.0
check("microbatches a step per replica", vt.microbatches(line_cases[1]) == 4,
      f"{vt.microbatches(line_cases[1])}")
check("no microbatch count without the batch sets", vt.microbatches(bare) is None)
lines = vt.batch_lines(line_cases, line_sim)
check("one line: the layout measured at three counts", len(lines) == 1, f"{lines}")
if lines:
    got = lines[0]
    check("line's microbatch counts", got["microbatches"] == [2, 4, 8], f"{got}")
    for key, want in (("measured_slope_s", 0.010), ("measured_intercept_s", 0.03),
                      ("simulated_slope_s", 0.008), ("simulated_intercept_s", 0.05)):
        check(f"line's {key}", near(got[key], want, 1e-9), f"{got[key]} != {want}")
    check("line's layout without the batch", all("global_batch" not in s for s in got["layout"]),
          f"{got['layout']}")

if failures:
    print(f"FAIL validate_training_test: {len(failures)} of {checks} checks failed")
    for f in failures:
        print("  " + f)
    sys.exit(1)
print(f"PASS validate_training_test: {checks} checks")
