#!/usr/bin/env python3
"""The classic workloads (harness/classic/) from two revisions of the library, wslab's rows only,
with the code layout controlled: is a difference the change's, or where the code landed?

Each revision's classic_bench is compiled twice by hand (g++ -O3, each revision's own headers and
harness): as the build makes it, and with every function, loop and jump target aligned to 64
bytes (-falign-functions=64 -falign-loops=64 -falign-jumps=64). A change can move an unrelated
hot loop across a cache-line or fetch-block boundary and shift a workload's time by a few per cent
with not one of its instructions changed (stage 5's README, Step 29, saw a fork's time follow where
its code landed by up to 30 %); the aligned build starts every loop and function at a line of its
own, a different layout with different boundaries. A difference that holds in both builds is the
change's; one that holds in only one of them is the layout's (callgrind's instruction count, which
no layout moves, is the other check).

The two revisions' binaries of each build take turns, one process each, the order flipped from
one run to the next; a cell is the median over the runs of each run's own b/a ratio (a host whose
speed drifts moves both halves of a pair alike), with its range. One-thread rows are pinned to
one CPU, both halves of a pair on the same one: a virtual machine's CPUs can differ in
speed by a third for minutes at a time.

  python3 scripts/ab_classic.py REV_A [REV_B] [--workloads nqueens,fib] [--threads 1,2] [--runs 7]

REV_B omitted: the working tree. Run from the repository's root while nothing else runs; needs
g++ and oneTBB (classic_bench's tbb rows are compiled in, not run). Python 3.11 standard library
(Linux: os.sched_setaffinity).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import classic  # noqa: E402  (run_one, machine: one process of classic_bench, the CPU's name)

ROOT = classic.ROOT
ALIGNED = ["-falign-functions=64", "-falign-loops=64", "-falign-jumps=64"]
BUILDS = (("plain", []), ("aligned", ALIGNED))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("rev_a", help="the revision to compare against (a)")
    p.add_argument("rev_b", nargs="?", help="the revision measured (b; default: the working tree)")
    p.add_argument("--workloads", default="fib,nqueens,matmul,uts_t1,uts_t3",
                   help="comma-separated (default: %(default)s)")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default: %(default)s)")
    p.add_argument("--runs", type=int, default=7, help="pairs per cell and build (default: %(default)s)")
    p.add_argument("--reps", type=int, default=3, help="timed repetitions per process (default: %(default)s)")
    p.add_argument("--warmup", type=int, default=1, help="untimed repetitions per process (default: %(default)s)")
    p.add_argument("--timeout", type=float, default=900, help="seconds per process (default: %(default)s)")
    p.add_argument("--cpu", type=int, default=0, help="the CPU one-thread rows run on (default: %(default)s)")
    args = p.parse_args()
    if args.runs < 1 or args.reps < 1 or args.warmup < 0:
        p.error("--runs and --reps must be >= 1, --warmup >= 0")
    return args


def git(*argv):
    return subprocess.run(["git", "-C", ROOT, *argv], capture_output=True, text=True,
                          check=True).stdout.strip()


def compile_bench(tree, flags, out):
    cmd = ["g++", "-O3", "-DNDEBUG", "-std=c++20", *flags, f"-I{tree}",
           os.path.join(tree, "harness", "classic", "classic_bench.cpp"), "-o", out, "-ltbb",
           "-pthread"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"ab_classic.py: {' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    return out


def main():
    args = parse_args()
    if not shutil.which("g++"):
        sys.exit("ab_classic.py: needs g++")
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    threads = sorted({int(t) for t in args.threads.split(",") if t.strip()})
    work = tempfile.mkdtemp(prefix="ab_classic.")
    trees = {}
    try:
        trees["a"] = os.path.join(work, "a")
        git("worktree", "add", "--detach", "-q", trees["a"], args.rev_a)
        if args.rev_b:
            trees["b"] = os.path.join(work, "b")
            git("worktree", "add", "--detach", "-q", trees["b"], args.rev_b)
        else:
            trees["b"] = ROOT
        jobs = []
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            for side, tree in trees.items():
                for build, flags in BUILDS:
                    out = os.path.join(work, f"classic_bench_{side}_{build}")
                    jobs.append(((side, build), pool.submit(compile_bench, tree, flags, out)))
            bins = {key: job.result() for key, job in jobs}
        measure(args, workloads, threads, bins)
    finally:
        for side in ("a", "b"):
            if trees.get(side, ROOT) != ROOT:
                subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", trees[side]],
                               capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def measure(args, workloads, threads, bins):
    cells = [(w, t, build) for w in workloads for t in threads for build, _ in BUILDS]
    ratios = {cell: [] for cell in cells}
    times = {(cell, side): [] for cell in cells for side in "ab"}
    busy = {(cell, side): [] for cell in cells for side in "ab"}
    start = time.monotonic()
    for run in range(args.runs):
        for cell in cells:
            w, t, build = cell
            got = {}
            for side in ("ab" if run % 2 == 0 else "ba"):
                one = argparse.Namespace(bin=bins[(side, build)], reps=args.reps, warmup=args.warmup,
                                         timeout=args.timeout)
                row, why = run_pinned(one, w, t, args.cpu if t == 1 else None)
                if why:
                    sys.exit(f"ab_classic.py: {side} ({build}) {w} {t} threads: {why}")
                got[side] = row
                times[(cell, side)].append(row["median_ms"])
                busy[(cell, side)].append(row["cpus_busy"])
            ratios[cell].append(got["b"]["median_ms"] / got["a"]["median_ms"])
            print(f"[run {run + 1}/{args.runs}, {time.monotonic() - start:.0f} s] {w} {t} {build}: "
                  f"a {got['a']['median_ms']:.1f} ms, b {got['b']['median_ms']:.1f} ms",
                  file=sys.stderr)
    host = classic.machine()
    cpu = f"{host.get('Model name', '?')}, family {host.get('CPU family', '?')} model {host.get('Model', '?')}"
    print(f"a = {args.rev_a}, b = {args.rev_b or 'the working tree'}; {cpu}, {host['CPUs']} CPUs; "
          f"{args.runs} pairs x {args.reps} repetitions per cell; load average "
          f"{os.getloadavg()[0]:.1f} after")
    print()
    print("| workload | threads | build | a: ms, CPUs busy | b: ms, CPUs busy | b/a (range) |")
    print("| --- | ---: | --- | --- | --- | --- |")
    for cell in cells:
        w, t, build = cell
        r = ratios[cell]
        side = {s: f"{statistics.median(times[(cell, s)]):.1f}, {statistics.median(busy[(cell, s)]):.2f}"
                for s in "ab"}
        print(f"| {w} | {t} | {build} | {side['a']} | {side['b']} | "
              f"{statistics.median(r):.3f} ({min(r):.3f}-{max(r):.3f}) |")


def run_pinned(one, workload, threads, cpu):
    """classic.run_one, its process pinned to `cpu` when one is given (a child inherits the
    affinity of the process that starts it)."""
    if cpu is None:
        return classic.run_one(one, workload, "wslab", threads)
    everywhere = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        return classic.run_one(one, workload, "wslab", threads)
    finally:
        os.sched_setaffinity(0, everywhere)


if __name__ == "__main__":
    main()
