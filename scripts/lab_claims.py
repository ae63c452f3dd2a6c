#!/usr/bin/env python3
"""Checks the lab's claims on this machine: runs each exercise's measurement of labs/README.md
several times and counts, for every claim its answer makes, in how many runs it held.

    python3 scripts/lab_claims.py --runs 5 --record     # about 12 minutes; this machine's file
    python3 scripts/update_docs.py labs/README.md       # the table, every machine recorded
    python3 scripts/lab_claims.py --runs 1 --exercises 13  # one, in seconds, nothing written
    python3 scripts/lab_claims.py --table FILE.json     # the table of one earlier --json run

Each exercise runs the command its section gives (lab_bench is called directly with the same
options plus --json, so nothing but the output file differs; Google Benchmark programs get
--benchmark_out), and its claims are checked on the numbers of that run. The rounds go over all
exercises in turn, so a noisy minute of the machine hits one run of each exercise rather than all
runs of one. The JSON keeps every run's values and how long each exercise took; the table judges
the claims from those values, so it always reflects the claims as this file states them.

A claim is either a direction that follows from the mechanism the exercise is about (it must hold
wherever that mechanism works), judged with a margin: "faster" and "slower" mean by at least
MARGIN (5 %), so a ratio of 1 is neither; or an observation, a value the student compares with the
answer's, whose size belongs to the machine (a cache line's transfer, a futex wake-up): shown,
never judged.

--record writes harness/results/lab_claims/<machine>.json, one file per kind of machine (CPU
vendor, family and model, hardware threads); the JSON also records the CPU's name, the kernel,
the compiler and the commit measured. labs/README.md shows every recorded machine as its own
column, between wslab-table markers rewritten by `python3 scripts/update_docs.py` (the one table
generator, which calls render() here); a claim holds only if it held in at least 4 runs of 5 on
every machine that measured it. Exercises whose program is missing (a TSan build for
Exercise 7, valgrind for Exercise 14) are skipped with a note, never counted as failures.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "release"
LAB_BENCH = BUILD / "harness" / "lab_bench"
TARGETS = ["lab_bench", "false_sharing_micro", "stage4_micro_bench", "stage5_algos_bench",
           "mandelbrot"]


GUIDE = ROOT / "labs" / "README.md"


def as_documented(fragment: str) -> None:
    """The measurements repeat the guide's commands; a command edited there and not here would
    make the table judge a different experiment, so each must still appear in the guide."""
    if fragment not in GUIDE.read_text():
        raise RuntimeError(f"labs/README.md no longer has `{fragment}`: update scripts/lab_claims.py")


class Skip(Exception):
    """The exercise cannot run here (a missing tool or build); not a failed claim."""


# ---- runners: each returns the numbers of one run of a command --------------------------------

def run(cmd: list[str], timeout: int = 900) -> str:
    done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {done.returncode}:\n{done.stdout[-3000:]}")
    return done.stdout


def lab_bench(options: str) -> dict:
    """(cell, executor, threads) -> the result row of one lab_bench run with these options."""
    as_documented("bash scripts/bench.sh " + options)
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "r.json"
        run([str(LAB_BENCH), *options.split(), "--no-plots", "-o", tmp, "--json", str(out)])
        rows = json.loads(out.read_text())["results"]
    return {(r["cell"], r["executor"], r["threads"]): r for r in rows}


def gbench(binary: str, benchmark_filter: str) -> dict:
    """name -> the benchmark's JSON entry (time in ns, counters as keys)."""
    as_documented(f"./build/release/{binary} ")
    as_documented(benchmark_filter)
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "b.json"
        run([str(BUILD / binary), f"--benchmark_filter={benchmark_filter}",
             f"--benchmark_out={out}", "--benchmark_out_format=json"])
        data = json.loads(out.read_text())
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
    found = {}
    for b in data["benchmarks"]:
        b["real_ns"] = b["real_time"] * scale[b["time_unit"]]
        # The family name without Google Benchmark's suffixes (/iterations:20/manual_time, ...).
        parts = [p for p in b["name"].split("/")
                 if p not in ("real_time", "manual_time", "process_time")
                 and not p.startswith(("iterations:", "min_time:"))]
        found["/".join(parts)] = b
    return found


MARGIN = 0.05  # "faster"/"slower": by at least 5 %; a ratio within it is neither


def faster(ratio: float) -> bool:
    return ratio >= 1 + MARGIN


def slower(ratio: float) -> bool:
    return ratio <= 1 - MARGIN


def thr(rows: dict, cell: str, executor: str, threads: int) -> float:
    return rows[(cell, executor, threads)]["throughput"]["median"]


def stat(rows: dict, cell: str, executor: str, threads: int, name: str) -> float:
    return rows[(cell, executor, threads)]["stats_median"].get(name, float("nan"))


# ---- the exercises: each measures once and returns {value name: number} -----------------------

def ex1() -> dict:
    r = lab_bench("-w grid --grid-cells 10000x100,1000000x0 --grid-work tiny -t 1,2 --processes 3 "
                  "-r 3 -p stage1_global_lock,stage2_per_thread_mutex")
    s1, s2, rec, ext = "stage1_global_lock", "stage2_per_thread_mutex", "tiny 10000x100", \
        "tiny 1000000x0"
    return {"recursive_2t": thr(r, rec, s2, 2) / thr(r, rec, s1, 2),
            "recursive_1t": thr(r, rec, s2, 1) / thr(r, rec, s1, 1),
            "global_s1": stat(r, rec, s1, 2, "global_pops"),
            "global_s2": stat(r, rec, s2, 2, "global_pops"),
            "external_2t": thr(r, ext, s2, 2) / thr(r, ext, s1, 2)}


def ex2() -> dict:
    r = lab_bench("-w grid --grid-cells 1x1000000,100x10000 --grid-work tiny -t 2 --processes 3 "
                  "-r 3 -p stage2_per_thread_mutex,stage2_per_thread_mutex:steal_one")
    half, one, cell = "stage2_per_thread_mutex", "stage2_per_thread_mutex:steal_one", \
        "tiny 1x1000000"
    return {"ops_half": stat(r, cell, half, 2, "steal_ops"),
            "ops_one": stat(r, cell, one, 2, "steal_ops"),
            "tasks_half": stat(r, cell, half, 2, "steals"),
            "tasks_one": stat(r, cell, one, 2, "steals"),
            "speed_1x1M": thr(r, cell, one, 2) / thr(r, cell, half, 2),
            "speed_100x10k": thr(r, "tiny 100x10000", one, 2) / thr(r, "tiny 100x10000", half, 2)}


def ex3() -> dict:
    r = lab_bench("-w grid --grid-cells 10000x100 --grid-work tiny -t 2 --processes 3 -r 3 -p "
                  "stage3_lock_wsq,stage3_lock_wsq:global_first,stage4_chase_lev,"
                  "stage4_chase_lev:injector_last")
    c = "tiny 10000x100"
    s3, gf, s4, il = "stage3_lock_wsq", "stage3_lock_wsq:global_first", "stage4_chase_lev", \
        "stage4_chase_lev:injector_last"
    return {"global_first": thr(r, c, gf, 2) / thr(r, c, s3, 2),
            "steals_s3": stat(r, c, s3, 2, "steals"), "steals_gf": stat(r, c, gf, 2, "steals"),
            "injector_last": thr(r, c, il, 2) / thr(r, c, s4, 2),
            "fails_s4": stat(r, c, s4, 2, "failed_steals"),
            "fails_il": stat(r, c, il, 2, "failed_steals"),
            "steals_s4": stat(r, c, s4, 2, "steals"), "steals_il": stat(r, c, il, 2, "steals")}


def ex4() -> dict:
    text = run([str(BUILD / "harness" / "false_sharing_micro")])
    ratios = dict(re.findall(r"^(\w+)\s+shared line / padded: ([\d.]+)x", text, re.M))
    r = lab_bench("-w grid --grid-cells 100x10000 --grid-work none -t 2 --processes 3 -r 3 -p "
                  "stage4_chase_lev,stage4_chase_lev:unpadded")
    c = "none 100x10000"
    return {"fetch_add": float(ratios["fetch_add"]), "store": float(ratios["store"]),
            "unpadded": thr(r, c, "stage4_chase_lev:unpadded", 2) / thr(r, c, "stage4_chase_lev", 2)}


def ex5() -> dict:
    r = lab_bench("-w fib --fib-n 27 -t 2 --processes 3 -r 3 -p stage4_chase_lev,"
                  "stage4_chase_lev:fifo")
    c = "fib(27)"
    return {"fifo": thr(r, c, "stage4_chase_lev:fifo", 2) / thr(r, c, "stage4_chase_lev", 2),
            "steals_lifo": stat(r, c, "stage4_chase_lev", 2, "steals"),
            "steals_fifo": stat(r, c, "stage4_chase_lev:fifo", 2, "steals")}


def ex6() -> dict:
    r = lab_bench("-w grid,fib --grid-cells 10000x100 --grid-work tiny --fib-n 25 -t 2 "
                  "--processes 3 -r 3 -p stage4_chase_lev,stage4_chase_lev:no_spin")
    g, f, s, n = "tiny 10000x100", "fib(25)", "stage4_chase_lev", "stage4_chase_lev:no_spin"
    b = gbench("harness/stage4_micro_bench", "PushToStart|IdleCpu")
    idle = [v["idle_cpu_ms_per_s"] for k, v in b.items() if "IdleCpu" in k]
    return {"grid": thr(r, g, n, 2) / thr(r, g, s, 2), "fib": thr(r, f, n, 2) / thr(r, f, s, 2),
            "parks_spin": stat(r, g, s, 2, "parks") + stat(r, f, s, 2, "parks"),
            "parks_no_spin": stat(r, g, n, 2, "parks") + stat(r, f, n, 2, "parks"),
            "wake_spinning_ns": b["BM_PushToStartSpinning"]["median_ns"],
            "wake_parked_ns": b["BM_PushToStartParked"]["median_ns"],
            "idle_cpu_ms_per_s": max(idle)}


def ex7() -> dict:
    binary = ROOT / "build" / "tsan" / "stage4_chase_lev" / "stage4_weakened_deque_is_caught"
    if not binary.exists():
        raise Skip("no TSan build (cmake --preset tsan && cmake --build --preset tsan "
                   "--target stage4_weakened_deque_is_caught)")
    done = subprocess.run([str(binary)], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)
    return {"tsan_reports": float("WARNING: ThreadSanitizer: data race" in done.stdout)}


def ex8() -> dict:
    b = gbench("harness/stage5_algos_bench",
               "fib30/(join/stage1_global_lock|join/stage4_chase_lev|join/stage5_parallel_algos"
               "|tbb_task_group)/")
    ns = {k.split("/")[-1]: v["s_per_fork"] * 1e9 for k, v in b.items()}  # seconds per fork
    return {"stage1_ns": ns["stage1_global_lock"], "stage4_ns": ns["stage4_chase_lev"],
            "stage5_ns": ns["stage5_parallel_algos"], "tbb_ns": ns["tbb_task_group"]}


def ex10() -> dict:
    as_documented("mandelbrot --all-pools --width 960 --height 540 --repeat 5")
    text = run([str(BUILD / "stage5_parallel_algos" / "mandelbrot"), "--all-pools", "--width",
                "960", "--height", "540", "--repeat", "5", "-o", os.devnull])
    speedups = {m[0]: float(m[1]) for m in re.findall(r"^(\S+)\s+1 thread.*speedup ([\d.]+)x",
                                                      text, re.M)}
    return {"lowest_speedup": min(speedups.values()), "highest_speedup": max(speedups.values()),
            **{f"speedup:{pool}": x for pool, x in speedups.items()}}


def ex11() -> dict:
    b = gbench("harness/stage5_algos_bench",
               "^(parallel_for|parallel_reduce|sort10M)/.*(tbb|std_sort|stage5)")
    t = {k: v["real_ns"] for k, v in b.items()}
    mine = lambda family: next(v for k, v in t.items() if k.startswith(family + "/")
                               and k.endswith("stage5_parallel_algos"))
    return {"for": t["parallel_for/tbb"] / mine("parallel_for"),
            "reduce": t["parallel_reduce/tbb"] / mine("parallel_reduce"),
            "reduce_four_lanes": t["parallel_reduce/tbb_four_lanes"] / mine("parallel_reduce"),
            "sort": t["sort10M/tbb_parallel_sort"] / mine("sort10M"),
            "sort_vs_std_sort": t["sort10M/std_sort"] / mine("sort10M")}


def ex12() -> dict:
    r = lab_bench("-w fib --fib-n 27 -t 2,8 --processes 3 -r 3 -p pools,tbb")
    c = "fib(27)"
    out = {}
    for (cell, executor, threads), row in r.items():
        if cell != c or threads != 2 or (c, executor, 8) not in r:
            continue
        out[f"{executor}:8_over_2"] = thr(r, c, executor, 8) / thr(r, c, executor, 2)
        if "stats_median" in row:
            out[f"{executor}:fails_2"] = stat(r, c, executor, 2, "failed_steals")
            out[f"{executor}:fails_8"] = stat(r, c, executor, 8, "failed_steals")
    return out


def ex13() -> dict:
    b = gbench("harness/stage4_micro_bench", "DequeStealUncontended")
    ns = b["BM_DequeStealUncontended"]["ns_per_steal"] * 1e9  # the counter is in seconds
    return {"ns_per_steal": ns, "wrap32_s": 2**32 * ns / 1e9,
            "wrap64_years": 2**63 * ns / 1e9 / (365.25 * 24 * 3600)}


def callgrind_ir(benchmark_filter: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "cg.out"
        run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
             str(BUILD / "harness" / "stage4_micro_bench"),
             f"--benchmark_filter={benchmark_filter}", "--benchmark_min_time=0.01"], timeout=1800)
        return float(re.search(r"^summary:\s+(\d+)", out.read_text(), re.M).group(1))


def ex14() -> dict:
    if shutil.which("valgrind") is None:
        raise Skip("valgrind is not installed (apt-get install valgrind)")
    base = callgrind_ir("none")
    per_task = lambda pool: (callgrind_ir(f"BM_SpawnExecute/{pool}/") - base) / 1e6
    return {"stage1": per_task("stage1_global_lock"), "stage4": per_task("stage4_chase_lev"),
            "stage5": per_task("stage5_parallel_algos")}


def own_pool() -> dict:
    r = lab_bench("-w grid --grid-cells 10000x100,1000000x0 --grid-work tiny -t 1,2 --processes 3 "
                  "-r 3 -p stage1_global_lock,labs:my_pool")
    o = lab_bench("-w grid --grid-cells 10000x100 --grid-work tiny -t 2,8 --processes 3 -r 3 "
                  "-p labs:my_pool,labs:my_pool_spin_only")
    rec, ext, s1 = "tiny 10000x100", "tiny 1000000x0", "stage1_global_lock"
    mine, spin = "labs:my_pool", "labs:my_pool_spin_only"
    # Keys of their own: the committed runs' recursive_2t and external_2t measured a pool whose
    # lock never slept, and are not judged as this one's.
    return {"parking_recursive_2t": thr(r, rec, mine, 2) / thr(r, rec, s1, 2),
            "parking_external_2t": thr(r, ext, mine, 2) / thr(r, ext, s1, 2),
            "spin_only_2t": thr(o, rec, spin, 2) / thr(o, rec, mine, 2),
            "spin_only_8t": thr(o, rec, spin, 8) / thr(o, rec, mine, 8)}


OWN_POOL_CLAIMS = [
    ("recursive grid, 2 threads: the example pool not slower than stage 1",
     lambda v: not slower(v["parking_recursive_2t"]), "parking_recursive_2t"),
    ("observed: 8 threads, more than the CPUs: the pure spinlock over the one that parks", None,
     "spin_only_8t"),
]


def stealing(v: dict) -> list[str]:
    """Ex. 12's pools that steal (stage 1 has one queue and nothing to steal from)."""
    return sorted(k[: -len(":fails_2")] for k in v
                  if k.endswith(":fails_2") and not k.startswith("stage1"))


# exercise -> (its measurement, [(claim as the answer states it, test, values shown)]); a test of
# None is an observation: its values are shown for every run and machine, never judged.
EXERCISES = {
    "1": (ex1, [
        ("recursive grid, 2 threads: stage 2 faster than stage 1",
         lambda v: faster(v["recursive_2t"]), "recursive_2t"),
        ("recursive grid, 1 thread: stage 2 faster than stage 1",
         lambda v: faster(v["recursive_1t"]), "recursive_1t"),
        ("stage 1 takes 50x more tasks from the global queue than stage 2",
         lambda v: v["global_s1"] > 50 * v["global_s2"], "global_s1,global_s2"),
        ("all-external grid, 2 threads: the two within 15 %",
         lambda v: abs(v["external_2t"] - 1) < 0.15, "external_2t"),
    ]),
    "2": (ex2, [
        ("1 x 1,000,000: steal-one makes 10x the steals (lock round trips) of steal-half",
         lambda v: v["ops_one"] > 10 * v["ops_half"], "ops_one,ops_half"),
        ("1 x 1,000,000: steal-one slower than steal-half",
         lambda v: slower(v["speed_1x1M"]), "speed_1x1M"),
        ("100 x 10,000: the two within 10 %",
         lambda v: abs(v["speed_100x10k"] - 1) < 0.10, "speed_100x10k"),
    ]),
    "3": (ex3, [
        ("global_first slower than stage 3", lambda v: slower(v["global_first"]), "global_first"),
        ("global_first steals 10x the tasks stage 3 steals",
         lambda v: v["steals_gf"] > 10 * v["steals_s3"], "steals_gf,steals_s3"),
        ("injector_last fails 10x the steals stage 4 fails",
         lambda v: v["fails_il"] > 10 * v["fails_s4"], "fails_il,fails_s4"),
        ("injector_last steals 100x the tasks stage 4 steals",
         lambda v: v["steals_il"] > 100 * max(v["steals_s4"], 1), "steals_il,steals_s4"),
        ("observed: injector_last over stage 4 (what those steals cost)", None, "injector_last"),
    ]),
    "4": (ex4, [
        ("fetch_add on one line at least 1.5x slower than padded",
         lambda v: v["fetch_add"] >= 1.5, "fetch_add"),
        ("observed: store on one line over padded (the store buffer's share)", None, "store"),
        ("observed: the unpadded pool over the padded one (how often both cores write one line)",
         None, "unpadded"),
    ]),
    "5": (ex5, [
        ("fifo slower than LIFO", lambda v: slower(v["fifo"]), "fifo"),
        ("fifo steals 100x the tasks LIFO steals",
         lambda v: v["steals_fifo"] > 100 * max(v["steals_lifo"], 1), "steals_fifo,steals_lifo"),
    ]),
    "6": (ex6, [
        ("grid: no_spin within 5 % of spinning", lambda v: abs(v["grid"] - 1) < 0.05, "grid"),
        ("no_spin parks more often than spinning", lambda v: v["parks_no_spin"] > v["parks_spin"],
         "parks_no_spin,parks_spin"),
        ("waking a parked worker takes 10x as long as reaching a searching one",
         lambda v: v["wake_parked_ns"] > 10 * v["wake_spinning_ns"],
         "wake_parked_ns,wake_spinning_ns"),
        ("an idle pool burns under 100 ms of CPU per second",
         lambda v: v["idle_cpu_ms_per_s"] < 100, "idle_cpu_ms_per_s"),
    ]),
    "7": (ex7, [
        ("TSan reports the race of the weakened push", lambda v: v["tsan_reports"] == 1,
         "tsan_reports"),
    ]),
    "8": (ex8, [
        ("a join on stage 5 at least 5x as fast as the generic join on stages 1 and 4",
         lambda v: min(v["stage1_ns"], v["stage4_ns"]) >= 5 * v["stage5_ns"],
         "stage1_ns,stage4_ns,stage5_ns"),
        ("oneTBB's task_group between the generic join (stages 1, 4) and stage 5's",
         lambda v: v["stage5_ns"] < v["tbb_ns"] < min(v["stage1_ns"], v["stage4_ns"]), "tbb_ns"),
        ("observed: stage 1 over stage 4, ns per join (the lock against a heap node)", None,
         lambda v: fmt_value(v["stage1_ns"] / v["stage4_ns"])),
    ]),
    "10": (ex10, [
        ("every pool's speedup within 10 % of the best pool's",
         lambda v: v["lowest_speedup"] >= 0.9 * v["highest_speedup"],
         "lowest_speedup,highest_speedup"),
        ("observed: the speedups themselves (the machine's second CPU)", None,
         "lowest_speedup,highest_speedup"),
    ]),
    "11": (ex11, [
        ("parallel_for within 15 % of oneTBB", lambda v: abs(v["for"] - 1) < 0.15, "for"),
        ("parallel_reduce faster than oneTBB's plain one", lambda v: v["reduce"] > 1.2, "reduce"),
        ("the four-lane fold alone makes oneTBB's reduce at least 1.5x faster",
         lambda v: v["reduce"] >= 1.5 * v["reduce_four_lanes"], "reduce_four_lanes"),
        ("parallel_sort at least 2x as fast as oneTBB's", lambda v: v["sort"] >= 2, "sort"),
    ]),
    "12": (ex12, [
        ("every stealing pool (stages 2-5) fails more steals at 8 threads than at 2",
         lambda v: all(v[s + ":fails_8"] > v[s + ":fails_2"] for s in stealing(v)),
         lambda v: "{} / {}".format(*(f"{fmt_value(min(xs))}-{fmt_value(max(xs))}" for xs in (
             [v[s + ":fails_2"] for s in stealing(v)], [v[s + ":fails_8"] for s in stealing(v)])))),
    ]),
    "13": (ex13, [
        ("a 32-bit top wraps within an hour", lambda v: v["wrap32_s"] < 3600, "wrap32_s"),
        ("a 64-bit top lasts over 100 years", lambda v: v["wrap64_years"] > 100, "wrap64_years"),
    ]),
    "14": (ex14, [
        ("stage 5 runs fewer instructions per task than stage 1",
         lambda v: v["stage5"] < v["stage1"], "stage5,stage1"),
        ("stage 4 runs more instructions per task than stage 1",
         lambda v: v["stage4"] > v["stage1"], "stage4,stage1"),
    ]),
    "own": (own_pool, OWN_POOL_CLAIMS),
}


# ---- the table ---------------------------------------------------------------------------------

def fmt_value(x: float) -> str:
    if x != x:
        return "n/a"
    if abs(x) >= 1e4:
        return f"{x:.3g}".replace("e+0", "e").replace("e+", "e")
    return f"{x:.3g}" if abs(x) < 100 else f"{x:.0f}"


def shown(values: dict, keys) -> str:
    if callable(keys):
        return keys(values)
    parts = []
    for key in keys.split(","):
        if key.startswith(":"):  # one value per pool: the range over pools
            xs = [v for k, v in values.items() if k.endswith(key)]
            parts.append(f"{fmt_value(min(xs))}-{fmt_value(max(xs))}" if xs else "n/a")
        else:
            parts.append(fmt_value(values.get(key, float("nan"))))
    return " / ".join(parts)


HELD_IN = 0.8  # a claim holds on a machine when it held in at least 4 runs of 5 there


def machine_label(data: dict) -> str:
    m = data["machine"]
    if isinstance(m, str):  # a run that recorded only the CPU's name and thread count
        return f"{m} (model, kernel and compiler not recorded)"
    return (f"{m['cpu']} (family {m['family']}, model {m['model']}), {m['hardware_threads']} "
            f"hardware threads{', ' + m['hypervisor'] if m.get('hypervisor') else ''}")


def verdicts(data: dict, number: str, test, keys) -> tuple[list, list[str], float] | None:
    """For one claim on one machine: which runs held (None for an observation), the values shown
    per run, the median seconds; None when the machine did not measure it."""
    runs = [r for r in data["exercises"].get(number, {}).get("runs", []) if "values" in r]
    measured = []
    for r in runs:
        if isinstance(keys, str) and any(k not in r["values"] for k in keys.split(",")
                                         if not k.startswith(":")):
            continue  # a value this run did not record
        try:
            held = None if test is None else bool(test(r["values"]))
            measured.append((held, shown(r["values"], keys), r["seconds"]))
        except (KeyError, ValueError, ZeroDivisionError):  # a value this run did not record
            pass
    if not measured:
        return None
    return ([h for h, _, _ in measured], [v for _, v, _ in measured],
            statistics.median(s for _, _, s in measured))


def table(runs: list[dict]) -> str:
    header = "| exercise | claim | holds on every machine | " + " | ".join(
        f"machine {i + 1}: held, values per run (s per run)" for i in range(len(runs))) + " |"
    lines = [header, "| --- | --- | --- |" + " --- |" * len(runs)]
    for number, (_, claims) in EXERCISES.items():
        for claim, test, keys in claims:  # judged again from the values: claims may be reworded
            cells, everywhere, measured_on = [], True, 0
            for data in runs:
                v = verdicts(data, number, test, keys)
                if v is None:
                    cells.append("not measured")
                    continue
                held, values, seconds = v
                measured_on += 1
                if test is None:
                    cells.append(f"{'; '.join(values)} ({seconds:.0f} s)")
                    continue
                count = sum(held)
                everywhere &= count >= HELD_IN * len(held)
                cells.append(f"{count} of {len(held)}: {'; '.join(values)} ({seconds:.0f} s)")
            if measured_on == 0:
                continue
            verdict = ("observation" if test is None else
                       ("yes" if everywhere else "**no**")
                       + (f" ({measured_on} of {len(runs)} machines measured it)"
                          if measured_on < len(runs) else ""))
            label = number if number != "own" else "own pool"
            lines.append(f"| {label} | {claim} | {verdict} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def short(commit: str) -> str:
    return commit[:10] + commit[40:]


def footer(runs: list[dict]) -> str:
    out = []
    for i, data in enumerate(runs):
        loads = [r["load_average"] for e in data["exercises"].values() for r in e["runs"]]
        m = data["machine"]
        extra = ("" if isinstance(m, str) else
                 f"; {m['kernel']}; {m['compiler']}; commit {short(data.get('commit', '?'))}")
        out.append(f"<sub>machine {i + 1}: {machine_label(data)}{extra}; "
                   f"`{data['command_line']}`; load average {min(loads):.1f} to "
                   f"{max(loads):.1f} at the start of the runs</sub>")
    return "<br>\n".join(out) + "\n"


def render(runs: list[dict]) -> str:
    """The claims table of committed runs, one column per machine, as labs/README.md shows it."""
    return (table(runs) + "\n" + f"A claim holds on a machine when it held in at least "
            f"{HELD_IN:.0%} of its runs there; faster and slower mean by at least {MARGIN:.0%}; "
            f"an observation is shown, not judged.\n\n" + footer(runs))


def machine() -> dict:
    """What a run records about the machine: enough to tell two kinds of machine apart."""
    info = {"cpu": "unknown CPU", "vendor": "?", "family": "?", "model": "?"}
    keys = {"model name": "cpu", "vendor_id": "vendor", "cpu family": "family", "model": "model",
            "CPU implementer": "vendor", "CPU architecture": "family", "CPU part": "model"}
    seen, hypervisor = set(), False
    try:
        text = open("/proc/cpuinfo").read()
        for line in text.splitlines():
            key, _, value = (x.strip() for x in line.partition(":"))
            if key in keys and keys[key] not in seen:
                info[keys[key]] = value
                seen.add(keys[key])
        hypervisor = " hypervisor" in text
    except OSError:
        pass
    info["hardware_threads"] = os.cpu_count()
    info["hypervisor"] = "virtual machine" if hypervisor else ""
    info["kernel"] = f"{platform.system()} {platform.release()}"
    compiler = "c++"
    cache = BUILD / "CMakeCache.txt"
    if cache.exists():
        found = re.search(r"^CMAKE_CXX_COMPILER:\w+=(.+)$", cache.read_text(), re.M)
        compiler = found.group(1) if found else compiler
    try:
        info["compiler"] = subprocess.run([compiler, "--version"], capture_output=True,
                                          text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        info["compiler"] = compiler
    return info


def machine_file(m: dict) -> pathlib.Path:
    """One committed file per kind of machine: vendor, family, model and hardware threads."""
    slug = re.sub(r"[^a-z0-9]+", "_", f"{m['vendor']} f{m['family']} m{m['model']} "
                  f"{m['hardware_threads']}cpu".lower()).strip("_")
    return ROOT / "harness" / "results" / "lab_claims" / f"{slug}.json"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="runs of each exercise (default 5)")
    ap.add_argument("--exercises", default=",".join(EXERCISES),
                    help="which, comma-separated (default all: " + ",".join(EXERCISES) + ")")
    ap.add_argument("--json", help="write every run's values here (after each run)")
    ap.add_argument("--record", action="store_true",
                    help="write them to this machine's file in harness/results/lab_claims/ "
                         "(every exercise must run)")
    ap.add_argument("--table", metavar="JSON", nargs="+",
                    help="print the table of earlier runs (one file per machine)")
    ap.add_argument("--no-build", action="store_true", help="do not build the programs first")
    a = ap.parse_args()

    if a.table:
        print(render([json.loads(pathlib.Path(t).read_text()) for t in a.table]), end="")
        return 0
    else:
        chosen = [e.strip() for e in a.exercises.split(",") if e.strip()]
        unknown = [e for e in chosen if e not in EXERCISES]
        if unknown or a.runs < 1:
            ap.error(f"unknown exercise {unknown}" if unknown else "--runs must be at least 1")
        if a.record and (a.json or set(chosen) != set(EXERCISES)):
            ap.error("--record writes every exercise's runs to this machine's file: "
                     "no --json, no --exercises")
        if not a.no_build:
            subprocess.run(["cmake", "--preset", "release"], cwd=ROOT, check=True,
                           stdout=subprocess.DEVNULL)
            subprocess.run(["cmake", "--build", "--preset", "release", "--target", *TARGETS],
                           cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        git = lambda *args: subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True,
                                           text=True).stdout.strip()
        # The code measured: the commit, marked when the working tree differs from it.
        commit = git("rev-parse", "HEAD") + (" + uncommitted changes"
                                             if git("status", "--porcelain", "--untracked-files=no")
                                             else "")
        data = {"command_line": "python3 scripts/lab_claims.py " + " ".join(sys.argv[1:]),
                "machine": machine(), "commit": commit, "exercises": {}}
        out = machine_file(data["machine"]) if a.record else (a.json and pathlib.Path(a.json))
        for round_ in range(1, a.runs + 1):
            for number in chosen:
                measure, claims = EXERCISES[number]
                record = {"load_average": os.getloadavg()[0]}
                start = time.monotonic()
                try:
                    record["values"] = measure()
                except Skip as why:
                    record["skipped"] = str(why)
                except Exception as e:  # a failed command: reported, and the next one runs
                    record["skipped"] = f"error: {e}"
                record["seconds"] = time.monotonic() - start
                data["exercises"].setdefault(number, {"runs": []})["runs"].append(record)
                status = record.get("skipped") or " ".join(
                    "seen" if test is None else "held" if test(record["values"]) else "MISSED"
                    for _, test, _ in claims)
                print(f"round {round_}/{a.runs} exercise {number}: {status} "
                      f"({record['seconds']:.0f} s)", file=sys.stderr, flush=True)
                if out:
                    out.write_text(json.dumps(data, indent=1) + "\n")
    print(render([data]), end="")
    if a.record:
        print(f"wrote {out.relative_to(ROOT)}; `python3 scripts/update_docs.py labs/README.md` "
              f"puts it in the table", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
