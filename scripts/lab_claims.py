#!/usr/bin/env python3
"""Checks the lab's claims on this machine: runs each exercise's measurement of labs/README.md
several times and counts, for every claim its answer makes, in how many runs it held.

    python3 scripts/lab_claims.py --runs 5 --record     # about 16 minutes; this machine's file
    python3 scripts/update_docs.py labs/README.md       # the table, every machine recorded
    python3 scripts/lab_claims.py --runs 1 --exercises 13  # one, in seconds, nothing written
    python3 scripts/lab_claims.py --table FILE.json     # the table of one earlier --json run

It first builds what the chosen exercises run (the Release programs, and Exercise 7's test in the
ThreadSanitizer tree) and checks the tools they call (valgrind for Exercise 14). Anything missing
stops it with a non-zero exit before the first measurement: an exercise that cannot run is never a
passing run. `--skip 7,14` leaves named exercises out on purpose; the summary and the table then
say they were skipped.

Each exercise runs the command its section gives (lab_bench is called directly with the same
options plus --json, and Google Benchmark programs get --benchmark_out, so nothing but the output
file differs; Exercise 10's command runs MANDELBROT_RUNS times), and its claims are checked on the
numbers of that run. The rounds go over all exercises in turn, so a noisy minute of the machine
hits one run of each exercise rather than all runs of one. The JSON keeps every run's values, the
timings behind each ratio and how long each exercise took; the table judges the claims from those,
so it always reflects the claims as this file states them.

Three kinds of claim:
  * a comparison of two rows of one run, judged by its spread. Each row is timed several times in
    the run, interleaved with the other row (lab_bench: 3 processes x 3 repetitions, in rounds;
    Google Benchmark: interleaved repetitions; Exercise 10: its command run again). The median of
    n timings lies between their k-th smallest and k-th largest with at least 95 % confidence
    (median_interval: k = 2 for n = 9, the extremes for n < 9), and dividing the two rows'
    intervals crosswise gives an interval for the ratio of their medians. A difference is shown
    only when the whole interval lies beyond a threshold: "faster" and "slower" need one beyond
    1 +- MARGIN (5 %), and a tie ("within 10 %") fails only when one shows beyond its band ("not
    slower": below 1 - MARGIN). The noise of a shared machine then widens the interval, which can
    neither pass a difference nor fail a tie.
  * a claim on the run's figures: counts (steals, parks, instructions) or a factor (at least 2x
    as fast), compared with the run's medians.
  * an observation, a value the student compares with the answer's, whose size belongs to the
    machine (a cache line's transfer, a futex wake-up): shown, never judged.

--record writes harness/results/lab_claims/<machine>.json, one file per kind of machine (CPU
vendor, family and model, hardware threads); the JSON also records the CPU's name, the kernel,
the compiler and the commit measured. labs/README.md shows every recorded machine as its own
column, between wslab-table markers rewritten by `python3 scripts/update_docs.py` (the one table
generator, which calls render() here); a claim holds only if it held in at least 4 runs of 5 on
every machine that judged it. The exit status is 0 only when every chosen exercise ran in every
round and every judged claim held in at least 4 runs of 5 (with --runs 1: in the one run).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import pathlib
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "release"
LAB_BENCH = BUILD / "harness" / "lab_bench"
TSAN_TEST = ROOT / "build" / "tsan" / "stage4_chase_lev" / "stage4_weakened_deque_is_caught"

GUIDE = ROOT / "labs" / "README.md"


def as_documented(fragment: str) -> None:
    """The measurements repeat the guide's commands; a command edited there and not here would
    make the table judge a different experiment, so each must still appear in the guide."""
    if fragment not in GUIDE.read_text():
        raise RuntimeError(f"labs/README.md no longer has `{fragment}`: update scripts/lab_claims.py")


# ---- the statistics: an interval for the ratio of two medians ---------------------------------

CONFIDENCE = 0.95  # of each row's interval for its median
MARGIN = 0.05  # "faster"/"slower": by at least 5 %; a ratio within it is neither


def coverage(n: int, k: int) -> float:
    """How often [k-th smallest, k-th largest] of n independent timings contains their true
    median: 1 - 2 P(Binomial(n, 1/2) < k)."""
    return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n


def median_interval(xs: list[float]) -> tuple[float, float]:
    """The order-statistic interval of the median: [x(k), x(n+1-k)] for the largest k whose
    coverage is at least CONFIDENCE (k = 2 for 9 timings); the extremes when none reaches it."""
    s = sorted(xs)
    n, k = len(s), 1
    while k + 1 <= (n + 1) // 2 and coverage(n, k + 1) >= CONFIDENCE:
        k += 1
    return s[k - 1], s[n - k]


def ratio_interval(first: list[float], second: list[float]) -> tuple[float, float, float]:
    """median(first) / median(second), and the interval of that ratio made by dividing the two
    medians' intervals crosswise (it covers the true ratio whenever both cover their medians)."""
    lo1, hi1 = median_interval(first)
    lo2, hi2 = median_interval(second)
    return statistics.median(first) / statistics.median(second), lo1 / hi2, hi1 / lo2


class NoSpread(Exception):
    """The run kept one number per side (recorded before spreads were), so a claim judged by its
    interval cannot be judged on it."""


class Values(dict):
    """One run's values (name -> number), plus the timings behind each ratio judged by interval:
    samples[name] = [first's timings, second's timings], the ratio being median(first) /
    median(second)."""

    def __init__(self, values: dict | None = None, samples: dict | None = None):
        super().__init__(values or {})
        self.samples = dict(samples or {})

    def ratio(self, key: str, first: list[float], second: list[float]) -> None:
        first, second = [float(f"{x:.6g}") for x in first], [float(f"{x:.6g}") for x in second]
        self[key] = statistics.median(first) / statistics.median(second)
        self.samples[key] = [first, second]

    def interval(self, key: str) -> tuple[float, float]:
        if key not in self.samples:
            raise NoSpread(key)
        _, lo, hi = ratio_interval(*self.samples[key])
        return lo, hi


# The tests of claims judged by interval. Each carries .how, which the table prints.

def judged_as(how: str, test):
    test.how = how
    return test


# One rule makes all four: a difference is shown only when the whole interval lies beyond its
# threshold. "Faster" needs one shown beyond 1 + MARGIN; a tie within `band` fails only when one
# is shown beyond the band, on either side. So the noise can neither pass a difference nor fail a
# tie; a narrow interval (a quiet machine, a large effect) decides both.

def is_tie(lo: float, hi: float, band: float) -> bool:
    return not (lo > 1 + band or hi < 1 - band)


def tie(key: str, band: float):
    """Equal within `band`: the interval reaches into [1 - band, 1 + band]."""
    return judged_as("tie, by interval", lambda v: is_tie(*v.interval(key), band))


def faster(key: str):
    return judged_as("by interval", lambda v: v.interval(key)[0] >= 1 + MARGIN)


def slower(key: str):
    return judged_as("by interval", lambda v: v.interval(key)[1] <= 1 - MARGIN)


def not_slower(key: str):
    """A one-sided tie: fails only when the whole interval lies below 1 - MARGIN."""
    return judged_as("tie, by interval", lambda v: v.interval(key)[1] > 1 - MARGIN)


def not_faster(key: str):
    """The other one-sided tie: fails only when the whole interval lies above 1 + MARGIN."""
    return judged_as("tie, by interval", lambda v: v.interval(key)[0] < 1 + MARGIN)


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


def gbench(command: str) -> dict:
    """name -> the benchmark's JSON entry (time in ns as real_ns, counters as keys), for the
    guide's command as written; with repetitions, samples_ns holds every repetition's time."""
    as_documented(command)
    argv = shlex.split(command)
    argv[0] = str(ROOT / argv[0])
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "b.json"
        run([*argv, f"--benchmark_out={out}", "--benchmark_out_format=json"])
        data = json.loads(out.read_text())
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
    found = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue  # the repetitions themselves are kept below
        b["real_ns"] = b["real_time"] * scale[b["time_unit"]]
        # The family name without Google Benchmark's suffixes (/iterations:20/manual_time, ...).
        parts = [p for p in b["name"].split("/")
                 if p not in ("real_time", "manual_time", "process_time")
                 and not p.startswith(("iterations:", "min_time:", "repeats:"))]
        name = "/".join(parts)
        found.setdefault(name, b).setdefault("samples_ns", []).append(b["real_ns"])
    return found


def seconds(rows: dict, cell: str, executor: str, threads: int) -> list[float]:
    """Every timed repetition of one row (process by process)."""
    return rows[(cell, executor, threads)]["samples_seconds"]


def thr(rows: dict, cell: str, executor: str, threads: int) -> float:
    return rows[(cell, executor, threads)]["throughput"]["median"]


def stat(rows: dict, cell: str, executor: str, threads: int, name: str) -> float:
    return rows[(cell, executor, threads)]["stats_median"].get(name, float("nan"))


# ---- the exercises: each measures once and returns its Values ----------------------------------
# v.ratio(key, A's seconds, B's seconds) is B's speed over A's: above 1 when B is faster.

def ex1() -> Values:
    r = lab_bench("-w grid --grid-cells 10000x100,1000000x0 --grid-work tiny -t 1,2 --processes 3 "
                  "-r 3 -p stage1_global_lock,stage2_per_thread_mutex")
    s1, s2, rec, ext = "stage1_global_lock", "stage2_per_thread_mutex", "tiny 10000x100", \
        "tiny 1000000x0"
    v = Values({"global_s1": stat(r, rec, s1, 2, "global_pops"),
                "global_s2": stat(r, rec, s2, 2, "global_pops")})
    v.ratio("recursive_2t", seconds(r, rec, s1, 2), seconds(r, rec, s2, 2))
    v.ratio("recursive_1t", seconds(r, rec, s1, 1), seconds(r, rec, s2, 1))
    v.ratio("external_2t", seconds(r, ext, s1, 2), seconds(r, ext, s2, 2))
    return v


def ex2() -> Values:
    r = lab_bench("-w grid --grid-cells 1x1000000,100x10000 --grid-work tiny -t 2 --processes 3 "
                  "-r 3 -p stage2_per_thread_mutex,stage2_per_thread_mutex:steal_one")
    half, one, cell = "stage2_per_thread_mutex", "stage2_per_thread_mutex:steal_one", \
        "tiny 1x1000000"
    v = Values({"ops_half": stat(r, cell, half, 2, "steal_ops"),
                "ops_one": stat(r, cell, one, 2, "steal_ops"),
                "tasks_half": stat(r, cell, half, 2, "steals"),
                "tasks_one": stat(r, cell, one, 2, "steals")})
    v.ratio("speed_1x1M", seconds(r, cell, half, 2), seconds(r, cell, one, 2))
    v.ratio("speed_100x10k", seconds(r, "tiny 100x10000", half, 2),
            seconds(r, "tiny 100x10000", one, 2))
    return v


def ex3() -> Values:
    r = lab_bench("-w grid --grid-cells 10000x100 --grid-work tiny -t 2 --processes 3 -r 3 -p "
                  "stage3_lock_wsq,stage3_lock_wsq:global_first,stage4_chase_lev,"
                  "stage4_chase_lev:injector_last")
    c = "tiny 10000x100"
    s3, gf, s4, il = "stage3_lock_wsq", "stage3_lock_wsq:global_first", "stage4_chase_lev", \
        "stage4_chase_lev:injector_last"
    v = Values({"steals_s3": stat(r, c, s3, 2, "steals"), "steals_gf": stat(r, c, gf, 2, "steals"),
                "fails_s4": stat(r, c, s4, 2, "failed_steals"),
                "fails_il": stat(r, c, il, 2, "failed_steals"),
                "steals_s4": stat(r, c, s4, 2, "steals"), "steals_il": stat(r, c, il, 2, "steals")})
    v.ratio("global_first", seconds(r, c, s3, 2), seconds(r, c, gf, 2))
    v.ratio("injector_last", seconds(r, c, s4, 2), seconds(r, c, il, 2))
    return v


def ex4() -> Values:
    as_documented("./build/release/harness/false_sharing_micro\n")
    text = run([str(BUILD / "harness" / "false_sharing_micro")])
    ratios = dict(re.findall(r"^(\w+)\s+shared line / padded: ([\d.]+)x", text, re.M))
    r = lab_bench("-w grid --grid-cells 100x10000 --grid-work none -t 2 --processes 3 -r 3 -p "
                  "stage4_chase_lev,stage4_chase_lev:unpadded")
    c = "none 100x10000"
    v = Values({"fetch_add": float(ratios["fetch_add"]), "store": float(ratios["store"])})
    v.ratio("unpadded", seconds(r, c, "stage4_chase_lev", 2),
            seconds(r, c, "stage4_chase_lev:unpadded", 2))
    return v


def ex5() -> Values:
    r = lab_bench("-w fib --fib-n 27 -t 2 --processes 5 -r 3 -p stage4_chase_lev,"
                  "stage4_chase_lev:fifo")
    c = "fib(27)"
    v = Values({"steals_lifo": stat(r, c, "stage4_chase_lev", 2, "steals"),
                "steals_fifo": stat(r, c, "stage4_chase_lev:fifo", 2, "steals")})
    v.ratio("fifo", seconds(r, c, "stage4_chase_lev", 2), seconds(r, c, "stage4_chase_lev:fifo", 2))
    return v


def ex6() -> Values:
    r = lab_bench("-w grid,fib --grid-cells 10000x100 --grid-work tiny --fib-n 25 -t 2 "
                  "--processes 3 -r 3 -p stage4_chase_lev,stage4_chase_lev:no_spin")
    g, f, s, n = "tiny 10000x100", "fib(25)", "stage4_chase_lev", "stage4_chase_lev:no_spin"
    b = gbench("./build/release/harness/stage4_micro_bench --benchmark_filter='PushToStart|IdleCpu'")
    idle = [e["idle_cpu_ms_per_s"] for k, e in b.items() if "IdleCpu" in k]
    v = Values({"fib": thr(r, f, n, 2) / thr(r, f, s, 2),
                "parks_spin": stat(r, g, s, 2, "parks") + stat(r, f, s, 2, "parks"),
                "parks_no_spin": stat(r, g, n, 2, "parks") + stat(r, f, n, 2, "parks"),
                "wake_spinning_ns": b["BM_PushToStartSpinning"]["median_ns"],
                "wake_parked_ns": b["BM_PushToStartParked"]["median_ns"],
                "idle_cpu_ms_per_s": max(idle)})
    v.ratio("grid", seconds(r, g, s, 2), seconds(r, g, n, 2))
    return v


def ex7() -> Values:
    # Built before the rounds (build()); run as the guide runs it, the report read from stderr.
    as_documented("./build/tsan/stage4_chase_lev/stage4_weakened_deque_is_caught ")
    done = subprocess.run([str(TSAN_TEST)], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)
    if "ThreadSanitizer" in done.stdout and "WARNING: ThreadSanitizer" not in done.stdout:
        raise RuntimeError(f"the TSan test did not run:\n{done.stdout[-2000:]}")
    return Values({"tsan_reports": float("WARNING: ThreadSanitizer: data race" in done.stdout)})


def ex8() -> Values:
    b = gbench("./build/release/harness/stage5_algos_bench --threads 2 --benchmark_filter="
               "'fib30/(join/stage1_global_lock|join/stage4_chase_lev|join/stage5_parallel_algos"
               "|tbb_task_group)/'")
    ns = {k.split("/")[-1]: e["s_per_fork"] * 1e9 for k, e in b.items()}  # seconds per fork
    return Values({"stage1_ns": ns["stage1_global_lock"], "stage4_ns": ns["stage4_chase_lev"],
                   "stage5_ns": ns["stage5_parallel_algos"], "tbb_ns": ns["tbb_task_group"]})


MANDELBROT_RUNS = 3  # Exercise 10's command, run this many times per run: 3 speedups per pool


def ex10() -> Values:
    as_documented("mandelbrot --all-pools --width 960 --height 540 --repeat 5")
    per_pool: dict[str, list[float]] = {}
    for _ in range(MANDELBROT_RUNS):  # every pool in each, so the pools interleave
        text = run([str(BUILD / "demos" / "mandelbrot"), "--all-pools", "--width",
                    "960", "--height", "540", "--repeat", "5", "-o", os.devnull])
        for pool, x in re.findall(r"^(\S+)\s+1 thread.*speedup ([\d.]+)x", text, re.M):
            per_pool.setdefault(pool, []).append(float(x))
    medians = {pool: statistics.median(xs) for pool, xs in per_pool.items()}
    best = max(medians, key=medians.get)
    v = Values({"lowest_speedup": min(medians.values()), "highest_speedup": max(medians.values()),
                **{f"speedup:{pool}": x for pool, x in medians.items()}})
    for pool, xs in per_pool.items():  # every pool's speedup over the best one's
        if pool != best:
            v.ratio(f"vs_best:{pool}", xs, per_pool[best])
    v.ratio("lowest_vs_best", per_pool[min(medians, key=medians.get)], per_pool[best])
    return v


def every_pool_ties_the_best(band: float):
    def test(v):
        keys = [k for k in v.samples if k.startswith("vs_best:")]
        if not keys:
            raise NoSpread("vs_best")
        return all(is_tie(*v.interval(k), band) for k in keys)
    return judged_as("tie, by interval", test)


ALGOS = ("./build/release/harness/stage5_algos_bench --threads 2 --benchmark_filter='^(parallel_for|"
         "parallel_reduce|sort10M)/.*(tbb|std_sort|stage5)' --benchmark_repetitions=9 "
         "--benchmark_enable_random_interleaving=true --benchmark_min_time=0.1 "
         "--benchmark_display_aggregates_only=true")


def ex11() -> Values:
    b = gbench(ALGOS)
    t = {k: e["samples_ns"] for k, e in b.items()}
    mine = lambda family: next(xs for k, xs in t.items() if k.startswith(family + "/")
                               and k.endswith("stage5_parallel_algos"))
    med = lambda xs: statistics.median(xs)
    v = Values({"sort_vs_std_sort": med(t["sort10M/std_sort"]) / med(mine("sort10M"))})
    v.ratio("for", t["parallel_for/tbb"], mine("parallel_for"))
    v.ratio("sort", t["sort10M/tbb_parallel_sort"], mine("sort10M"))
    v.ratio("reduce", t["parallel_reduce/tbb"], mine("parallel_reduce"))
    v.ratio("reduce_four_lanes", t["parallel_reduce/tbb_four_lanes"], mine("parallel_reduce"))
    # The fold alone: oneTBB's plain reduce over the same call with four accumulators.
    v.ratio("four_lanes", t["parallel_reduce/tbb"], t["parallel_reduce/tbb_four_lanes"])
    return v


def ex12() -> Values:
    r = lab_bench("-w fib --fib-n 27 -t 2,8 --processes 3 -r 3 -p pools,tbb")
    c = "fib(27)"
    out = Values()
    for (cell, executor, threads), row in r.items():
        if cell != c or threads != 2 or (c, executor, 8) not in r:
            continue
        out[f"{executor}:8_over_2"] = thr(r, c, executor, 8) / thr(r, c, executor, 2)
        if "stats_median" in row:
            out[f"{executor}:fails_2"] = stat(r, c, executor, 2, "failed_steals")
            out[f"{executor}:fails_8"] = stat(r, c, executor, 8, "failed_steals")
    return out


def ex13() -> Values:
    b = gbench("./build/release/harness/stage4_micro_bench --benchmark_filter=DequeStealUncontended")
    ns = b["BM_DequeStealUncontended"]["ns_per_steal"] * 1e9  # the counter is in seconds
    return Values({"ns_per_steal": ns, "wrap32_s": 2**32 * ns / 1e9,
                   "wrap64_years": 2**63 * ns / 1e9 / (365.25 * 24 * 3600)})


def callgrind_ir(benchmark_filter: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "cg.out"
        run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
             str(BUILD / "harness" / "stage4_micro_bench"),
             f"--benchmark_filter={benchmark_filter}", "--benchmark_min_time=0.01"], timeout=1800)
        return float(re.search(r"^summary:\s+(\d+)", out.read_text(), re.M).group(1))


def ex14() -> Values:
    base = callgrind_ir("none")
    per_task = lambda pool: (callgrind_ir(f"BM_SpawnExecute/{pool}/") - base) / 1e6
    return Values({"stage1": per_task("stage1_global_lock"), "stage4": per_task("stage4_chase_lev"),
                   "stage5": per_task("stage5_parallel_algos")})


def own_pool() -> Values:
    r = lab_bench("-w grid --grid-cells 10000x100,1000000x0 --grid-work tiny -t 1,2 --processes 3 "
                  "-r 3 -p stage1_global_lock,labs:my_pool")
    o = lab_bench("-w grid --grid-cells 10000x100 --grid-work tiny -t 2,8 --processes 3 -r 3 "
                  "-p labs:my_pool,labs:my_pool_spin_only")
    rec, ext, s1 = "tiny 10000x100", "tiny 1000000x0", "stage1_global_lock"
    mine, spin = "labs:my_pool", "labs:my_pool_spin_only"
    # Keys of their own: the committed runs' recursive_2t and external_2t measured a pool whose
    # lock never slept, and are not judged as this one's.
    v = Values()
    v.ratio("parking_recursive_2t", seconds(r, rec, s1, 2), seconds(r, rec, mine, 2))
    v.ratio("parking_external_2t", seconds(r, ext, s1, 2), seconds(r, ext, mine, 2))
    v.ratio("spin_only_2t", seconds(o, rec, mine, 2), seconds(o, rec, spin, 2))
    v.ratio("spin_only_8t", seconds(o, rec, mine, 8), seconds(o, rec, spin, 8))
    return v


OWN_POOL_CLAIMS = [
    ("recursive grid, 2 threads: the example pool not slower than stage 1",
     not_slower("parking_recursive_2t"), "parking_recursive_2t"),
    ("observed: 8 threads, more than the CPUs: the pure spinlock over the one that parks", None,
     "spin_only_8t"),
]


def stealing(v: dict) -> list[str]:
    """Ex. 12's pools that steal (stage 1 has one queue and nothing to steal from)."""
    return sorted(k[: -len(":fails_2")] for k in v
                  if k.endswith(":fails_2") and not k.startswith("stage1"))


# What each exercise runs: its programs (the build tree's folder names the preset) and tools.
NEEDS = {
    "1": ["build/release/harness/lab_bench"],
    "2": ["build/release/harness/lab_bench"],
    "3": ["build/release/harness/lab_bench"],
    "4": ["build/release/harness/lab_bench", "build/release/harness/false_sharing_micro"],
    "5": ["build/release/harness/lab_bench"],
    "6": ["build/release/harness/lab_bench", "build/release/harness/stage4_micro_bench"],
    "7": [str(TSAN_TEST.relative_to(ROOT))],
    "8": ["build/release/harness/stage5_algos_bench"],
    "10": ["build/release/demos/mandelbrot"],
    "11": ["build/release/harness/stage5_algos_bench"],
    "12": ["build/release/harness/lab_bench"],
    "13": ["build/release/harness/stage4_micro_bench"],
    "14": ["build/release/harness/stage4_micro_bench", "tool:valgrind"],
    "own": ["build/release/harness/lab_bench"],
}

# exercise -> (its measurement, [(claim as the answer states it, test, values shown)]); a test of
# None is an observation: its values are shown for every run and machine, never judged. A test
# made by tie(), faster(), slower() or not_slower() is judged by the interval of its ratio; any
# other test is judged on the run's figures.
EXERCISES = {
    "1": (ex1, [
        ("recursive grid, 2 threads: stage 2 faster than stage 1",
         faster("recursive_2t"), "recursive_2t"),
        # One thread: no lock is contended, so what is left of the gain (a LIFO deque keeps the
        # recursion depth-first) is small beside a shared VM's spread.
        ("recursive grid, 1 thread: stage 2 not slower than stage 1",
         not_slower("recursive_1t"), "recursive_1t"),
        ("stage 1 takes 50x more tasks from the global queue than stage 2",
         lambda v: v["global_s1"] > 50 * v["global_s2"], "global_s1,global_s2"),
        ("all-external grid, 2 threads: the two within 15 %", tie("external_2t", 0.15),
         "external_2t"),
    ]),
    "2": (ex2, [
        ("1 x 1,000,000: steal-one makes 10x the steals (lock round trips) of steal-half",
         lambda v: v["ops_one"] > 10 * v["ops_half"], "ops_one,ops_half"),
        ("1 x 1,000,000: steal-one slower than steal-half", slower("speed_1x1M"), "speed_1x1M"),
        ("100 x 10,000: the two within 10 %", tie("speed_100x10k", 0.10), "speed_100x10k"),
    ]),
    "3": (ex3, [
        # Every median is below 1 on both machines, but 3 processes x 3 repetitions leave
        # intervals wide enough to reach 1 on a noisy host: the direction is claimed one-sided.
        ("global_first not faster than stage 3", not_faster("global_first"), "global_first"),
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
        ("fifo slower than LIFO", slower("fifo"), "fifo"),
        ("fifo steals 100x the tasks LIFO steals",
         lambda v: v["steals_fifo"] > 100 * max(v["steals_lifo"], 1), "steals_fifo,steals_lifo"),
    ]),
    "6": (ex6, [
        ("grid: no_spin within 5 % of spinning", tie("grid", 0.05), "grid"),
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
        ("every pool's speedup within 10 % of the best pool's", every_pool_ties_the_best(0.10),
         "lowest_speedup,highest_speedup,lowest_vs_best"),
        ("observed: the speedups themselves (the machine's second CPU)", None,
         "lowest_speedup,highest_speedup"),
    ]),
    "11": (ex11, [
        ("parallel_for within 15 % of oneTBB", tie("for", 0.15), "for"),
        # The four-lane fold: never slower (the same loads and adds in shorter dependency
        # chains); how much faster depends on the CPU, so the values are the observation.
        ("oneTBB's reduce: the four-lane fold alone not slower than one accumulator (how much "
         "faster is the CPU's: add latency against memory bandwidth)", not_slower("four_lanes"),
         lambda v: shown(v, "four_lanes") if "four_lanes" in v
         else fmt_value(v["reduce"] / v["reduce_four_lanes"])),
        ("parallel_reduce (four lanes in each leaf) not slower than oneTBB's plain one",
         not_slower("reduce"), "reduce"),
        ("observed: parallel_reduce over oneTBB given the same four-lane fold", None,
         "reduce_four_lanes"),
        ("parallel_sort faster than oneTBB's (by how much is the CPU's branch predictor)",
         faster("sort"), "sort"),
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
        # A heap node per task (stage 4) against two uncontended mutex round trips (stage 1): the
        # same order of instructions, so which is larger follows the compiler's inlining, not the
        # design. Shown, not judged.
        ("observed: stage 4's instructions per task against stage 1's", None, "stage4,stage1"),
    ]),
    "own": (own_pool, OWN_POOL_CLAIMS),
}


def how_judged(test) -> str:
    return "shown only" if test is None else getattr(test, "how", "on the run's figures")


# ---- the table ---------------------------------------------------------------------------------

def fmt_value(x: float) -> str:
    if x != x:
        return "n/a"
    if abs(x) >= 1e4:
        return f"{x:.3g}".replace("e+0", "e").replace("e+", "e")
    return f"{x:.3g}" if abs(x) < 100 else f"{x:.0f}"


def shown(values: Values, keys) -> str:
    """The values a claim shows for one run; a ratio judged by interval is followed by its
    interval in brackets."""
    if callable(keys):
        return keys(values)
    parts = []
    for key in keys.split(","):
        if key.startswith(":"):  # one value per pool: the range over pools
            xs = [v for k, v in values.items() if k.endswith(key)]
            parts.append(f"{fmt_value(min(xs))}-{fmt_value(max(xs))}" if xs else "n/a")
        elif key in values.samples:
            lo, hi = values.interval(key)
            parts.append(f"{fmt_value(values[key])} [{fmt_value(lo)}, {fmt_value(hi)}]")
        elif key in values:
            parts.append(fmt_value(values[key]))
    if not parts:  # none of them: a run of an earlier version, which measured something else
        raise KeyError(keys)
    return " / ".join(parts)


HELD_IN = 0.8  # a claim holds on a machine when it held in at least 4 runs of 5 there


def machine_kind(data: dict) -> str:
    """The column's heading: the kind of CPU, as far as the run recorded it."""
    m = data["machine"]
    if isinstance(m, str):  # a run that recorded only the CPU's name and thread count
        return f"{m.split(',')[0]}, model not recorded"
    return f"{m['cpu']}, family {m['family']} model {m['model']}"


def machine_label(data: dict) -> str:
    m = data["machine"]
    if isinstance(m, str):
        return f"{m} (model, kernel and compiler not recorded)"
    return (f"{m['cpu']} (family {m['family']}, model {m['model']}), {m['hardware_threads']} "
            f"hardware threads{', ' + m['hypervisor'] if m.get('hypervisor') else ''}")


def vendor(data: dict) -> str:
    m = data["machine"]
    text = m if isinstance(m, str) else f"{m.get('vendor', '')} {m.get('cpu', '')}"
    return ("Intel" if re.search(r"intel", text, re.I) else
            "AMD" if re.search(r"\bamd\b|authenticamd", text, re.I) else "other")


class Verdict:
    """One claim on one machine: every run's shown values, which runs held, and why some were not
    judged."""

    def __init__(self):
        self.held: list[bool] = []  # per judged run
        self.values: list[str] = []
        self.seconds: list[float] = []
        self.no_spread = 0  # runs that kept one number per side: not judged by interval
        self.failed = 0  # runs whose measurement failed: counted as not held


def verdict(data: dict, number: str, test, keys) -> Verdict | None:
    """None when the machine did not measure the claim."""
    out = Verdict()
    for r in data["exercises"].get(number, {}).get("runs", []):
        if "values" not in r:
            out.failed += 1
            continue
        v = Values(r["values"], r.get("samples"))
        try:
            text = shown(v, keys)
        except (KeyError, ValueError, ZeroDivisionError):
            continue  # a value this run did not record: measured by an earlier version
        if test is not None:
            try:
                out.held.append(bool(test(v)))
            except NoSpread:
                out.no_spread += 1
            except (KeyError, ValueError, ZeroDivisionError):
                continue
        out.values.append(text)
        out.seconds.append(r["seconds"])
    if not out.values and not out.failed:
        return None
    if test is not None and (out.held or not out.values):
        out.held += [False] * out.failed
    return out


def holds(v: Verdict) -> bool:
    return sum(v.held) >= HELD_IN * len(v.held)


def table(runs: list[dict], exercises=None) -> str:
    header = ("| exercise | claim | judged | holds on every machine that judged it | "
              + " | ".join(f"machine {i + 1}: {machine_kind(d)}" for i, d in enumerate(runs))
              + " |")
    lines = [header, "| --- | --- | --- | --- |" + " --- |" * len(runs)]
    for number, (_, claims) in EXERCISES.items():
        if exercises is not None and number not in exercises:
            continue
        for claim, test, keys in claims:  # judged again from the values: claims may be reworded
            cells, everywhere, measured_on, judged_on = [], True, 0, 0
            for data in runs:
                v = verdict(data, number, test, keys)
                if v is None:
                    skipped = number in data.get("skipped", {})
                    cells.append("skipped" if skipped else "not measured")
                    continue
                measured_on += 1
                figures = (f"{'; '.join(v.values)} ({statistics.median(v.seconds):.0f} s)"
                           if v.values else "no run completed")
                if test is None:
                    cells.append(figures)
                elif not v.held:
                    cells.append(f"not judged (one number per side recorded): {figures}")
                else:
                    judged_on += 1
                    everywhere &= holds(v)
                    failed = f" ({v.failed} failed to run)" if v.failed else ""
                    cells.append(f"{sum(v.held)} of {len(v.held)}{failed}: {figures}")
            if test is None:
                verdict_text = "observation"
            elif judged_on == 0:  # a claim reworded or newly judged: a row all the same
                verdict_text = "not judged yet" if measured_on else "not measured yet"
            else:
                verdict_text = (("yes" if everywhere else "**no**")
                                + (f" (judged on {judged_on} of {len(runs)} machines)"
                                   if judged_on < len(runs) else ""))
            label = number if number != "own" else "own pool"
            lines.append(f"| {label} | {claim} | {how_judged(test)} | {verdict_text} | "
                         + " | ".join(cells) + " |")
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
        skipped = "".join(f"; exercise {n} skipped ({why})"
                          for n, why in data.get("skipped", {}).items())
        out.append(f"<sub>machine {i + 1}: {machine_label(data)}{extra}; "
                   f"`{data['command_line']}`; load average {min(loads):.1f} to "
                   f"{max(loads):.1f} at the start of the runs{skipped}</sub>")
    return "<br>\n".join(out) + "\n"


def render(runs: list[dict], exercises=None) -> str:
    """The claims table of committed runs, one column per machine, as labs/README.md shows it
    (every claim; with `exercises`, only theirs)."""
    missing = [v for v in ("Intel", "AMD") if v not in {vendor(d) for d in runs}]
    never = "".join(f" No {v} CPU is recorded: no claim here has been judged on one." for v in missing)
    return (table(runs, exercises) + "\n"
            f"A claim holds on a machine when it held in at least {HELD_IN:.0%} of its runs there. "
            f"A ratio judged by interval is shown as median [interval]: faster (slower) holds in a "
            f"run when the whole interval lies above {1 + MARGIN:.2f} (below {1 - MARGIN:.2f}); a "
            f"tie fails only when the whole interval lies outside its band, not slower only when "
            f"it lies below {1 - MARGIN:.2f}. The other claims compare the run's counts or medians "
            f"with the stated factor; an observation is shown, not judged.{never}\n\n"
            + footer(runs))


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


# ---- before the rounds: everything the chosen exercises run, built and present ----------------

def build(chosen: list[str], no_build: bool) -> list[str]:
    """Builds the chosen exercises' programs (Release, and ThreadSanitizer for Exercise 7) and
    returns what is still missing: a tool not installed, a program that failed to build or (with
    --no-build) was never built."""
    needs = {p for n in chosen for p in NEEDS[n]}
    missing = [f"{p[5:]} (exercise {', '.join(n for n in chosen if p in NEEDS[n])}; "
               f"bash scripts/deps.sh installs it)"
               for p in sorted(needs) if p.startswith("tool:") and shutil.which(p[5:]) is None]
    programs = sorted(p for p in needs if not p.startswith("tool:"))
    for preset in sorted({pathlib.Path(p).parts[1] for p in programs}):
        targets = [pathlib.Path(p).name for p in programs if pathlib.Path(p).parts[1] == preset]
        if no_build:
            continue
        for cmd in (["bash", "scripts/configure_preset.sh", preset],
                    ["cmake", "--build", "--preset", preset, "--target", *targets]):
            print(f"== lab_claims: {' '.join(cmd)}", file=sys.stderr, flush=True)
            done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            if done.returncode != 0:
                print(done.stdout[-4000:], file=sys.stderr)
                missing.append(f"{', '.join(targets)}: `{' '.join(cmd)}` exited with "
                               f"{done.returncode}")
                break
    for p in programs:
        if not (ROOT / p).exists() and not any(p.split("/")[-1] in m for m in missing):
            missing.append(f"{p} (exercise {', '.join(n for n in chosen if p in NEEDS[n])}; "
                           f"not built{': run without --no-build' if no_build else ''})")
    return missing


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="runs of each exercise (default 5)")
    ap.add_argument("--exercises", default=",".join(EXERCISES),
                    help="which, comma-separated (default all: " + ",".join(EXERCISES) + ")")
    ap.add_argument("--skip", default="", metavar="N,...",
                    help="leave these exercises out on purpose (e.g. 7,14 on a machine without "
                         "TSan or valgrind); the summary and the table say they were skipped")
    ap.add_argument("--json", help="write every run's values here (after each run)")
    ap.add_argument("--record", action="store_true",
                    help="write them to this machine's file in harness/results/lab_claims/ "
                         "(every exercise not skipped must run)")
    ap.add_argument("--table", metavar="JSON", nargs="+",
                    help="print the table of earlier runs (one file per machine)")
    ap.add_argument("--no-build", action="store_true",
                    help="do not build the programs first (they must exist)")
    a = ap.parse_args()

    if a.table:
        print(render([json.loads(pathlib.Path(t).read_text()) for t in a.table]), end="")
        return 0
    listed = lambda text: [e.strip() for e in text.split(",") if e.strip()]
    skip = listed(a.skip)
    unknown = [e for e in listed(a.exercises) + skip if e not in EXERCISES]
    if unknown or a.runs < 1:
        ap.error(f"unknown exercise {unknown}" if unknown else "--runs must be at least 1")
    if a.record and (a.json or a.exercises != ap.get_default("exercises")):
        ap.error("--record writes every exercise's runs to this machine's file: no --json, no "
                 "--exercises (--skip names any exercise this machine cannot run)")
    chosen = [e for e in listed(a.exercises) if e not in skip]

    missing = build(chosen, a.no_build)
    if missing:
        print("lab_claims: cannot run every chosen exercise; missing:\n  " + "\n  ".join(missing)
              + "\nInstall or build what is missing (bash scripts/prelab.sh does both), or leave "
              "the exercise out on purpose with --skip N.", file=sys.stderr)
        return 1

    git = lambda *args: subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True,
                                       text=True).stdout.strip()
    # The code measured: the commit, marked when the working tree differs from it.
    commit = git("rev-parse", "HEAD") + (" + uncommitted changes"
                                         if git("status", "--porcelain", "--untracked-files=no")
                                         else "")
    data = {"command_line": "python3 scripts/lab_claims.py " + " ".join(sys.argv[1:]),
            "machine": machine(), "commit": commit, "exercises": {},
            "skipped": {n: "--skip" for n in skip if n in listed(a.exercises)}}
    out = machine_file(data["machine"]) if a.record else (a.json and pathlib.Path(a.json))
    for round_ in range(1, a.runs + 1):
        for number in chosen:
            measure, claims = EXERCISES[number]
            record = {"load_average": os.getloadavg()[0]}
            start = time.monotonic()
            try:
                v = measure()
                record["values"] = dict(v)
                if v.samples:
                    record["samples"] = v.samples
            except Exception as e:  # a failed command: reported, counted, and the next one runs
                record["error"] = f"{type(e).__name__}: {e}"
            record["seconds"] = time.monotonic() - start
            data["exercises"].setdefault(number, {"runs": []})["runs"].append(record)
            status = (f"FAILED TO RUN: {record['error']}" if "error" in record else " ".join(
                judge_once(test, v) for _, test, _ in claims))
            print(f"round {round_}/{a.runs} exercise {number}: {status} "
                  f"({record['seconds']:.0f} s)", file=sys.stderr, flush=True)
            if out:
                out.write_text(json.dumps(data, indent=1) + "\n")
    print(render([data], chosen), end="")
    if a.record:
        print(f"wrote {out.relative_to(ROOT)}; `python3 scripts/update_docs.py labs/README.md` "
              f"puts it in the table", file=sys.stderr)
    return summary(data, chosen)


def judge_once(test, v: Values) -> str:
    if test is None:
        return "seen"
    try:
        return "held" if test(v) else "MISSED"
    except (KeyError, ValueError, ZeroDivisionError, NoSpread) as e:
        return f"MISSED({type(e).__name__}: {e})"


def summary(data: dict, chosen: list[str]) -> int:
    """What did not hold, what failed to run and what was skipped; 0 only when every chosen
    exercise ran in every round and every judged claim held in HELD_IN of the runs."""
    bad = []
    for number in chosen:
        for claim, test, keys in EXERCISES[number][1]:
            v = verdict(data, number, test, keys)
            if v is None or (test is not None and not v.held):
                bad.append(f"exercise {number}: {claim}: not judged")
            elif test is not None and not holds(v):
                bad.append(f"exercise {number}: {claim}: held in {sum(v.held)} of {len(v.held)}")
        failed = [r["error"] for r in data["exercises"][number]["runs"] if "error" in r]
        if failed:
            bad.append(f"exercise {number} failed to run in {len(failed)} of "
                       f"{len(data['exercises'][number]['runs'])} runs: {failed[0][:500]}")
    for number, why in data["skipped"].items():
        print(f"lab_claims: exercise {number} skipped ({why}): its claims were not checked",
              file=sys.stderr)
    if bad:
        print("lab_claims: FAILED\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    print(f"lab_claims: every judged claim of {len(chosen)} exercise(s) held in at least "
          f"{HELD_IN:.0%} of the runs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
