#!/usr/bin/env python3
"""Runs classic_bench (harness/classic/) over workloads x systems x thread counts and prints one
Markdown table per thread count.

Every row (workload, system, threads) runs --runs times, each time as a fresh process (a process
settles into its own speed: where its threads land, what state its allocator is in), and the rows
take turns, round-robin: run 1 of every row, then run 2 of every row, ..., so that a slow patch
of a shared machine spreads over all rows instead of hitting whichever came last. A cell is the
median over the runs of each run's median repetition, in brackets that time over seq's (below 1:
faster than the sequential program), then the median CPUs busy (process CPU time over wall time
during the timed repetitions). seq runs once per workload and run, on one thread, and is the
baseline of every table. The ratio in brackets is the median of each run's own ratio (that run's
time over the same run's seq), and the speed-up table divides each run's one-thread time by the
same run's N-thread time: a host that changes speed between runs (a shared VM does, by a third
within minutes) moves both sides of a run's ratio together, where a ratio of medians would mix
fast runs with slow ones. floor (wslab's program on a stand-in pool with no scheduler,
harness/classic/no_scheduler.hpp) runs on one thread as seq does; with it in the run, a last
table divides each system's one-thread time by the same run's floor: what the scheduler costs
beyond the program's own shape.

  python3 scripts/classic.py --bin build/release/harness/classic/classic_bench --runs 3 --threads 1,2

Builds nothing: build the binary first (harness/classic/README.md). Python 3.11 standard library.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_BIN = os.path.join(ROOT, "build", "release", "harness", "classic", "classic_bench")
ONE_THREAD = ("seq", "floor")  # systems without threads: one row per workload, in every table


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", default=DEFAULT_BIN, help="the classic_bench binary (default: %(default)s)")
    p.add_argument("--workloads", help="comma-separated (default: every workload of the binary)")
    p.add_argument("--systems", help="comma-separated (default: every system of the binary)")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default: %(default)s)")
    p.add_argument("--runs", type=int, default=5, help="processes per row (default: %(default)s)")
    p.add_argument("--reps", type=int, default=3, help="timed repetitions per process (default: %(default)s)")
    p.add_argument("--warmup", type=int, default=1, help="untimed repetitions per process (default: %(default)s)")
    p.add_argument("--timeout", type=float, default=900, help="seconds per process (default: %(default)s)")
    p.add_argument("--json", metavar="FILE", help="write every run's row, the failures and the machine here")
    args = p.parse_args()
    if args.runs < 1 or args.reps < 1 or args.warmup < 0:
        p.error("--runs and --reps must be >= 1, --warmup >= 0")
    return args


def pick(requested, available, what):
    """The requested names in the binary's order, or all of them; an unknown name is an error."""
    if not requested:
        return list(available)
    names = [x.strip() for x in requested.split(",") if x.strip()]
    unknown = [x for x in names if x not in available]
    if unknown:
        sys.exit(f"classic.py: unknown {what} {', '.join(unknown)} (this binary has {', '.join(available)})")
    return [x for x in available if x in names]


def machine():
    """lscpu's model name, family and model, the CPU count and the load average (the machine may be
    shared: the load says how much of it these figures had)."""
    info = {}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("Model name", "CPU family", "Model"):
                info[key.strip()] = value.strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    info["CPUs"] = os.cpu_count()
    return info


def run_one(args, workload, system, threads):
    """One process; returns (row, None) or (None, why it failed)."""
    cmd = [args.bin, "--workload", workload, "--system", system, "--threads", str(threads),
           "--reps", str(args.reps), "--warmup", str(args.warmup)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {args.timeout:.0f} s: {' '.join(cmd)}"
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip() + " " + p.stdout.strip()).strip()[-400:]
        return None, f"exit status {p.returncode}: {tail} ({' '.join(cmd)})"
    return json.loads(lines[-1]), None


def fmt_ms(ms):
    return f"{ms:.1f}" if ms < 100 else f"{ms:.0f}"


def main():
    args = parse_args()
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"classic.py: no executable {args.bin} (build the target classic_bench first)")
    listing = json.loads(subprocess.run([args.bin, "--list"], capture_output=True, text=True,
                                        check=True).stdout)
    workloads = pick(args.workloads, listing["workloads"], "workload")
    systems = pick(args.systems, listing["systems"], "system")
    threads = sorted({int(t) for t in args.threads.split(",") if t.strip()})

    rows = []  # (workload, system, threads): seq once, on one thread
    for w in workloads:
        for s in systems:
            for t in ([1] if s in ONE_THREAD else threads):
                rows.append((w, s, t))

    host = machine()
    host["load average before"] = os.getloadavg()[0]
    results = {row: [] for row in rows}  # row -> its runs' JSON rows
    failures = {}  # row -> why
    start = time.monotonic()
    for run in range(args.runs):
        for row in rows:
            if row in failures:
                continue  # a broken row is not retried, and never shown as fast
            got, why = run_one(args, *row)
            w, s, t = row
            if why:
                failures[row] = why
                print(f"FAILED {w} {s} {t} threads: {why}", file=sys.stderr)
                continue
            got["run"] = run
            results[row].append(got)
            print(f"[run {run + 1}/{args.runs}, {time.monotonic() - start:.0f} s] {w} {s} {t}: "
                  f"{fmt_ms(got['median_ms'])} ms, {got['cpus_busy']:.2f} CPUs", file=sys.stderr)
    host["load average after"] = os.getloadavg()[0]

    def cell_stats(row):
        runs = results.get(row, [])
        if not runs:
            return None
        return (statistics.median(r["median_ms"] for r in runs),
                statistics.median(r["cpus_busy"] for r in runs))

    def run_ratio(row, base_row):
        """The median over runs of row's time over base_row's time in the same run (None: no run
        has both)."""
        base = {r["run"]: r["median_ms"] for r in results.get(base_row, [])}
        ratios = [r["median_ms"] / base[r["run"]] for r in results.get(row, []) if r["run"] in base]
        return statistics.median(ratios) if ratios else None

    for t in threads:
        print(f"\n### {t} thread{'s' if t > 1 else ''}\n")
        print("cell: median ms [median of each run's time over its seq's] CPUs busy\n")
        print("| workload (n) | " + " | ".join(systems) + " |")
        print("| --- |" + " --- |" * len(systems))
        for w in workloads:
            n = next((r[0]["n"] for r in results.values() if r and r[0]["workload"] == w), "?")
            cells = []
            for s in systems:
                row = (w, s, 1 if s in ONE_THREAD else t)
                if row in failures:
                    cells.append("**FAILED**")
                    continue
                st = cell_stats(row)
                if st is None:
                    cells.append("–")
                    continue
                r = run_ratio(row, (w, "seq", 1))
                ratio = f"{r:.2f}" if r is not None else "–"
                cells.append(f"{fmt_ms(st[0])} [{ratio}] {st[1]:.2f}")
            print(f"| {w} ({n}) | " + " | ".join(cells) + " |")
    def ratio_table(title, cell, columns, heading, ratio):
        """A table of run ratios: a row per workload, a column per entry of `columns`."""
        print(f"\n### {title}\n")
        print(f"cell: median over runs of {cell}\n")
        print("| workload | " + " | ".join(heading(c) for c in columns) + " |")
        print("| --- |" + " --- |" * len(columns))
        for w in workloads:
            ratios = (ratio(w, c) for c in columns)
            print(f"| {w} | " + " | ".join(f"{r:.2f}" if r is not None else "–" for r in ratios)
                  + " |")

    many = [t for t in threads if t > 1]
    pooled = [s for s in systems if s not in ONE_THREAD]
    if 1 in threads and many:
        ratio_table("Speed-up over one thread",
                    "the run's one-thread time over its N-thread time",
                    [(s, t) for s in pooled for t in many], lambda c: f"{c[0]}, {c[1]} threads",
                    lambda w, c: run_ratio((w, c[0], 1), (w, c[0], c[1])))
    if 1 in threads and "floor" in systems and pooled:
        ratio_table("One thread over the floor",
                    "the run's one-thread time over its floor's (wslab's program with no "
                    "scheduler)", pooled, lambda s: s,
                    lambda w, s: run_ratio((w, s, 1), (w, "floor", 1)))
    model = ", ".join(f"{k} {host[k]}" for k in ("Model name", "CPU family", "Model") if k in host)
    print(f"\n<sub>ms: median over {args.runs} process(es) of each one's median of {args.reps} "
          f"repetition(s) ({args.warmup} warm-up); [median of each run's time over its seq's]; CPUs "
          f"busy during the timed repetitions. seq and floor run on one thread, the same row in every table. {model}; "
          f"{host['CPUs']} CPUs; load average {host['load average before']:.1f} before, "
          f"{host['load average after']:.1f} after.</sub>")
    for row, why in failures.items():
        print(f"\nFAILED {' '.join(map(str, row))}: {why}")

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": host, "command": sys.argv,
                       "rows": [r for row in rows for r in results[row]],
                       "failures": [{"workload": w, "system": s, "threads": t, "why": why}
                                    for (w, s, t), why in failures.items()]}, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
