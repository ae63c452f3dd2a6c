#!/usr/bin/env python3
"""Times the same busy loop on each CPU in turn (the process pinned to one CPU at a time), and
says whether the CPUs run at the same speed.

On a virtual machine they often do not: a vCPU whose host core is shared with another guest, or
runs at a lower clock, can be a third slower than its neighbour for minutes at a time. A thread
that lands on the slow one then takes a third longer, so a one-thread cell of the harness moves
between processes by as much, and a ratio of two programs timed on different CPUs is off by it.
The project's own ratios are taken on one thread where this matters (stage5_spawn_bench's fib
rows time the sequential fib and the forking one back to back on the same thread); the lab's
comparisons interleave processes, so a difference only widens their intervals.

Usage: python3 scripts/cpu_speeds.py [--rounds N] [--max-spread PERCENT]
  Prints each CPU's median time for the loop and its ratio to the fastest. Exits 0 always unless
  --max-spread is given: then 1 when the slowest CPU is more than PERCENT slower than the fastest.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

LOOP = 1_000_000  # iterations: about 50 ms of one CPU


def busy() -> float:
    """Seconds for a fixed loop of dependent additions on the current CPU."""
    start = time.perf_counter()
    x = 0
    for i in range(LOOP):
        x = (x + i) & 0xFFFF
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="timings per CPU (default 7)")
    parser.add_argument("--max-spread", type=float, metavar="PERCENT",
                        help="exit 1 when the slowest CPU is slower than the fastest by more")
    args = parser.parse_args()
    if not hasattr(os, "sched_setaffinity"):
        print("cpu_speeds.py: this system cannot pin a process to a CPU; nothing measured")
        return 0
    cpus = sorted(os.sched_getaffinity(0))
    times: dict[int, list[float]] = {cpu: [] for cpu in cpus}
    try:
        # Round by round, each CPU in turn, so that a host whose speed drifts moves all alike.
        for _ in range(args.rounds):
            for cpu in cpus:
                os.sched_setaffinity(0, {cpu})
                times[cpu].append(busy())
    finally:
        os.sched_setaffinity(0, set(cpus))
    medians = {cpu: statistics.median(t) for cpu, t in times.items()}
    fastest = min(medians.values())
    for cpu in cpus:
        print(f"cpu {cpu}: {medians[cpu] * 1e3:7.1f} ms for the loop, "
              f"{medians[cpu] / fastest:.2f}x the fastest")
    spread = (max(medians.values()) / fastest - 1) * 100
    verdict = ("the CPUs run at the same speed" if spread <= 5 else
               "the CPUs run at different speeds now: a one-thread time depends on the CPU its "
               "thread lands on")
    print(f"slowest over fastest: +{spread:.0f} % ({verdict})")
    if args.max_spread is not None and spread > args.max_spread:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
