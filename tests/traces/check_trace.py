#!/usr/bin/env python3
"""Checks prismsim's traces as Perfetto and PyTorch-profiler tools read them.

usage: check_trace.py chrome FILE
       check_trace.py kineto DIRECTORY   (its rank*.pt.trace.json files, checked together)

Every trace: a JSON object with a "traceEvents" list; complete events ("ph": "X") with a name,
category, integer pid and tid from 1, ts and dur in microseconds on the nanosecond grid; every
process and thread named by metadata events; on each track (pid, tid) slices that touch, nest or
are apart, never partly overlapping, after converting times to nanoseconds as Perfetto does
(llround(us * 1000)). Kineto traces also: "schemaVersion", "deviceProperties", "distributedInfo"
with its process groups; per kernel an "External id" and "correlation" naming one cpu_op and one
cuda_runtime launch on the host, which starts no later than the kernel, and an "ac2g" flow from
the launch to the kernel; NCCL kernels with the profiler's collective arguments, their
"Process Group Name" naming the same ranks in every file and listed in "distributedInfo".
Prints one line per problem (at most 20 per file) and exits 1 if there is any.
"""
import glob
import json
import os
import sys

problems = []


def problem(where, text):
    problems.append(f"{where}: {text}")


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def to_ns(us):
    """Microseconds to nanoseconds as Perfetto's JSON importer converts them."""
    return int(round(us * 1000.0))


def on_grid(us):
    return abs(us * 1000.0 - round(us * 1000.0)) < 1e-3


def check_nesting(where, slices):
    """slices: per track a list of (start_ns, end_ns, name)."""
    for track, items in sorted(slices.items()):
        items.sort(key=lambda s: (s[0], -(s[1] - s[0])))
        stack = []
        for start, end, name in items:
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack and end > stack[-1][1]:
                top = stack[-1]
                problem(where, f"track pid {track[0]} tid {track[1]}: '{name}' [{start}, {end}] ns "
                               f"overlaps '{top[2]}' [{top[0]}, {top[1]}] ns partly")
                continue
            stack.append((start, end, name))


METADATA_ARGS = {"process_name": ("name", str), "process_labels": ("labels", str),
                 "process_sort_index": ("sort_index", int), "thread_name": ("name", str),
                 "thread_sort_index": ("sort_index", int)}


def check_events(where, trace):
    """Checks what every Chrome trace needs; returns the events and the slices by track."""
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        problem(where, "not an object with a \"traceEvents\" list")
        return [], {}
    if not isinstance(trace.get("displayTimeUnit"), str):
        problem(where, "\"displayTimeUnit\" missing or not a string")
    events = trace["traceEvents"]
    slices, named_processes, named_threads, used_threads = {}, set(), set(), set()
    for i, e in enumerate(events):
        at = f"{where}: event {i}"
        if not isinstance(e, dict) or not isinstance(e.get("ph"), str):
            problem(at, "not an object with a \"ph\" string")
            continue
        ph = e["ph"]
        if ph in ("X", "M", "s", "f"):
            for key in ("pid",) + (("tid",) if ph != "M" else ()):
                if not is_int(e.get(key)) or e[key] < 1:
                    problem(at, f"\"{key}\" must be an integer from 1, got {e.get(key)!r}")
        if ph == "M":
            spec = METADATA_ARGS.get(e.get("name"))
            if spec is None:
                problem(at, f"unknown metadata event {e.get('name')!r}")
                continue
            args = e.get("args")
            if not isinstance(args, dict) or not isinstance(args.get(spec[0]), spec[1]):
                problem(at, f"{e['name']} needs args.{spec[0]} of type {spec[1].__name__}")
            if e["name"].startswith("thread"):
                if not is_int(e.get("tid")) or e["tid"] < 1:
                    problem(at, f"\"tid\" must be an integer from 1, got {e.get('tid')!r}")
                if e["name"] == "thread_name":
                    named_threads.add((e.get("pid"), e.get("tid")))
            elif e["name"] == "process_name":
                named_processes.add(e.get("pid"))
        elif ph == "X":
            for key in ("name", "cat"):
                if not isinstance(e.get(key), str) or not e[key]:
                    problem(at, f"\"{key}\" must be a non-empty string")
            ok = True
            for key in ("ts", "dur"):
                v = e.get(key)
                if not is_num(v) or v < 0 or not on_grid(v):
                    problem(at, f"\"{key}\" must be a non-negative number of microseconds with at "
                                f"most 3 decimals, got {v!r}")
                    ok = False
            if "args" in e and not isinstance(e["args"], dict):
                problem(at, "\"args\" must be an object")
            if ok:
                track = (e.get("pid"), e.get("tid"))
                used_threads.add(track)
                start = to_ns(e["ts"])
                slices.setdefault(track, []).append((start, start + to_ns(e["dur"]), e.get("name")))
        elif ph in ("s", "f"):
            if not is_num(e.get("ts")) or not on_grid(e["ts"]):
                problem(at, f"flow \"ts\" must be microseconds with at most 3 decimals")
            if not is_int(e.get("id")) or e["id"] < 1:
                problem(at, f"flow \"id\" must be an integer from 1, got {e.get('id')!r}")
        else:
            problem(at, f"unexpected phase {ph!r}")
    for track in sorted(used_threads - named_threads, key=str):
        problem(where, f"thread pid {track[0]} tid {track[1]} has slices but no thread_name")
    for pid in sorted({t[0] for t in used_threads} - named_processes, key=str):
        problem(where, f"process {pid} has slices but no process_name")
    check_nesting(where, slices)
    return events, slices


def check_chrome(path):
    try:
        trace = json.load(open(path))
    except (OSError, ValueError) as e:
        problem(path, f"cannot read: {e}")
        return
    events, _ = check_events(path, trace)
    if not any(e.get("ph") == "X" for e in events if isinstance(e, dict)):
        problem(path, "no slices")


def parse_rank_list(where, text):
    try:
        ranks = json.loads(text)
    except ValueError:
        ranks = None
    if not isinstance(ranks, list) or not all(is_int(r) and r >= 0 for r in ranks):
        problem(where, f"\"Process Group Ranks\" must be a string holding a list of ranks, got "
                       f"{text!r}")
        return None
    return ranks


def check_nccl_args(at, args, groups_here, names_seen):
    need = {"Process Group Name": str, "Process Group Description": str,
            "Process Group Ranks": str, "Group size": int, "Rank": int}
    if "Collective name" in args:
        need.update({"Collective name": str, "In msg nelems": int, "Out msg nelems": int,
                     "dtype": str, "In split size": str, "Out split size": str})
    for key, kind in need.items():
        v = args.get(key)
        if not (is_int(v) if kind is int else isinstance(v, kind)):
            problem(at, f"NCCL kernel needs args[\"{key}\"] of type {kind.__name__}, got {v!r}")
            return
    ranks = parse_rank_list(at, args["Process Group Ranks"])
    if ranks is None:
        return
    if len(ranks) != args["Group size"]:
        problem(at, f"\"Group size\" {args['Group size']} but {len(ranks)} ranks")
    name = args["Process Group Name"]
    key = (args["Process Group Description"], tuple(sorted(ranks)))
    if names_seen.setdefault(name, key) != key:
        problem(at, f"process group name {name!r} stands for {names_seen[name]} and for {key}")
    if name not in groups_here:
        problem(at, f"process group {name!r} is not in distributedInfo.pg_config")
    elif sorted(groups_here[name]) != sorted(ranks):
        problem(at, f"process group {name!r}: ranks differ from distributedInfo.pg_config")


def check_kineto_file(path, names_seen):
    try:
        trace = json.load(open(path))
    except (OSError, ValueError) as e:
        problem(path, f"cannot read: {e}")
        return
    events, _ = check_events(path, trace)
    if not isinstance(trace, dict):
        return
    if not is_int(trace.get("schemaVersion")):
        problem(path, "\"schemaVersion\" missing or not an integer")
    devices = trace.get("deviceProperties")
    if not isinstance(devices, list) or not devices:
        problem(path, "\"deviceProperties\" must be a non-empty list")
    else:
        for d in devices:
            if not (isinstance(d, dict) and is_int(d.get("id")) and isinstance(d.get("name"), str)
                    and is_int(d.get("totalGlobalMem"))):
                problem(path, f"a deviceProperties entry needs id, name, totalGlobalMem: {d!r}")
    info = trace.get("distributedInfo")
    groups_here = {}
    if not isinstance(info, dict):
        problem(path, "\"distributedInfo\" missing")
    else:
        for key, kind in (("backend", str), ("rank", int), ("world_size", int), ("pg_count", int),
                          ("pg_config", list)):
            v = info.get(key)
            if not (is_int(v) if kind is int else isinstance(v, kind)):
                problem(path, f"distributedInfo.{key} must be of type {kind.__name__}")
        for pg in info.get("pg_config") or []:
            ok = (isinstance(pg, dict) and isinstance(pg.get("pg_name"), str)
                  and isinstance(pg.get("pg_desc"), str) and is_int(pg.get("pg_size"))
                  and isinstance(pg.get("ranks"), list) and len(pg["ranks"]) == pg["pg_size"]
                  and all(is_int(r) for r in pg["ranks"]))
            if not ok:
                problem(path, f"a pg_config entry needs pg_name, pg_desc, pg_size, ranks: {pg!r}")
                continue
            if pg["pg_name"] in groups_here:
                problem(path, f"process group {pg['pg_name']!r} listed twice")
            groups_here[pg["pg_name"]] = pg["ranks"]
        if is_int(info.get("pg_count")) and info["pg_count"] != len(info.get("pg_config") or []):
            problem(path, "distributedInfo.pg_count differs from the length of pg_config")
    cpu_ops, runtimes, kernels, flows = {}, {}, [], {}
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            continue
        at = f"{path}: event {i}"
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        if e.get("ph") == "X" and e.get("cat") == "cpu_op":
            x = args.get("External id")
            if not is_int(x) or x < 1 or x in cpu_ops:
                problem(at, f"cpu_op needs a distinct integer \"External id\" from 1, got {x!r}")
            cpu_ops[x] = e
        elif e.get("ph") == "X" and e.get("cat") == "cuda_runtime":
            c = args.get("correlation")
            if not (is_int(c) and c >= 1 and c not in runtimes and is_int(args.get("cbid"))
                    and is_int(args.get("External id"))):
                problem(at, "cuda_runtime needs a distinct integer \"correlation\" from 1, an "
                            "integer \"cbid\" and \"External id\"")
            runtimes[c] = e
        elif e.get("ph") == "X" and e.get("cat") == "kernel":
            kernels.append((at, e, args))
        elif e.get("ph") in ("s", "f"):
            if e.get("cat") != "ac2g":
                problem(at, f"flow category {e.get('cat')!r}, expected 'ac2g'")
            key = (e.get("id"), e["ph"])
            if key in flows:
                problem(at, f"second flow {e['ph']!r} with id {e.get('id')}")
            flows[key] = e
    if not kernels:
        problem(path, "no GPU kernels")
    correlations = set()
    for at, e, args in kernels:
        for key in ("External id", "correlation", "device", "stream"):
            if not is_int(args.get(key)):
                problem(at, f"kernel needs an integer args[\"{key}\"]")
                break
        else:
            c = args["correlation"]
            if c in correlations:
                problem(at, f"correlation {c} used by two kernels")
            correlations.add(c)
            if args["stream"] != e.get("tid"):
                problem(at, "kernel's args.stream differs from its tid")
            if args["External id"] not in cpu_ops:
                problem(at, f"no cpu_op with External id {args['External id']}")
            launch = runtimes.get(c)
            if launch is None:
                problem(at, f"no cuda_runtime launch with correlation {c}")
            elif launch.get("ts", 0) > e.get("ts", 0):
                problem(at, f"launched at {launch['ts']} us, after the kernel starts")
            start, end = flows.get((c, "s")), flows.get((c, "f"))
            if start is None or end is None:
                problem(at, f"no ac2g flow pair with id {c}")
            else:
                if (end.get("pid"), end.get("tid"), end.get("ts")) != (e.get("pid"), e.get("tid"),
                                                                        e.get("ts")):
                    problem(at, "the flow's end is not at the kernel's start on its track")
                if launch is not None and ((start.get("pid"), start.get("tid")) !=
                                           (launch.get("pid"), launch.get("tid")) or not
                                           launch["ts"] <= start.get("ts", -1) <=
                                           launch["ts"] + launch.get("dur", 0)):
                    problem(at, "the flow's start is not within its cuda_runtime launch")
        if e.get("name", "").startswith("ncclDevKernel"):
            check_nccl_args(at, args, groups_here, names_seen)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("chrome", "kineto"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    kind, path = sys.argv[1:]
    if kind == "chrome":
        check_chrome(path)
    else:
        files = sorted(glob.glob(os.path.join(path, "rank*.pt.trace.json")))
        if not files:
            problem(path, "no rank*.pt.trace.json files")
        names_seen = {}
        for f in files:
            check_kineto_file(f, names_seen)
    shown = {}
    for p in problems:
        where = p.split(":")[0]
        shown[where] = shown.get(where, 0) + 1
        if shown[where] <= 20:
            print(p)
    if problems:
        print(f"{len(problems)} problems")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
