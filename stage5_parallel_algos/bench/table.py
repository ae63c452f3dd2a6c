#!/usr/bin/env python3
"""Turns stage5_algos_bench JSON (run with --benchmark_repetitions=N) into the chapter's table:
median wall time per row, and the ratio of each wslab row to the oneTBB row of its group.

    stage5_algos_bench --benchmark_repetitions=5 --benchmark_format=json > runs.json
    python3 table.py runs.json [pool]   # pool: the wslab pool to compare (default stage4_chase_lev)
"""
import json
import sys

REFERENCE = {  # group -> the oneTBB row the ratio is taken against
    "fib30": "fib30/tbb_parallel_invoke",
    "parallel_for": "parallel_for/tbb",
    "parallel_reduce": "parallel_reduce/tbb",
    "parallel_transform_reduce": "parallel_transform_reduce/tbb",
    "parallel_inclusive_scan": "parallel_inclusive_scan/tbb",
    "sort10M": "sort10M/tbb_parallel_sort",
    # oneTBB has no stable sort; libstdc++'s parallel std::stable_sort runs on it.
    "stable_sort10M": "stable_sort10M/std_stable_sort_par",
}


def main():
    data = json.load(open(sys.argv[1]))
    pool = sys.argv[2] if len(sys.argv) > 2 else "stage4_chase_lev"
    medians = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        name = b["run_name"].split("/process_time")[0].split("/real_time")[0]
        medians[name] = b["real_time"]  # milliseconds (the benchmark's unit)
    print(f"| row | median wall time (ms) | / oneTBB |")
    print("| --- | ---: | ---: |")
    # Grouped by benchmark (random interleaving writes them in run order).
    for name, ms in sorted(medians.items(), key=lambda item: item[0].split("/")[0]):
        group = name.split("/")[0]
        ref = medians.get(REFERENCE.get(group, ""))
        ratio = f"{ms / ref:.2f}" if ref and name != REFERENCE[group] else ""
        mark = " **(compared)**" if name.endswith(pool) else ""
        extra = ""
        if group == "fib30":
            forks = 1346268  # fib(31) - 1 joins in fib(30)
            extra = f" ({ms * 1e6 / forks:.1f} ns/fork)"
        print(f"| `{name}`{mark} | {ms:.1f}{extra} | {ratio} |")


if __name__ == "__main__":
    main()
