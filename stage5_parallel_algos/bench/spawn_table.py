#!/usr/bin/env python3
"""Turns stage5_spawn_bench JSON from several processes into the chapter's spawn tables: the
median time per task of every row over all repetitions of all processes, each row beside oneTBB's
(or beside the full scheduler, for the step rows) from the same runs.

    for p in 1 2 3; do
      build/release/stage5_parallel_algos/stage5_spawn_bench --benchmark_repetitions=5 \\
          --benchmark_min_time=0.2 --benchmark_out=stage5_parallel_algos/bench/results/spawn_$p.json
    done
    python3 stage5_parallel_algos/bench/spawn_table.py stage5_parallel_algos/bench/results/spawn_*.json \\
        --update stage5_parallel_algos/README.md

It prints three tables: the four patterns beside oneTBB, the step rows beside the full
scheduler, and fib(30) by join. With --update it also puts the first one between
<!-- spawn-table --> and <!-- /spawn-table --> in that file.
"""
import argparse
import json
import os
import re
import statistics
import sys

CELLS = [  # (threads, rounds, n), in the order of the tables' rows
    (1, 1, 1000000),
    (1, 1000, 1000),
    (2, 1, 1000000),
    (2, 1000, 1000),
]
MAIN = [  # column title, benchmark family
    ("`TaskGroup`", "wslab_task_group"),
    ("`spawn` + `wait_all`", "wslab_spawn"),
    ("`spawn` from outside", "wslab_external"),
    ("oneTBB `task_group`", "tbb_task_group"),
]
STEPS = [
    ("all steps", "step_task_group/full"),
    ("generic group (Step 9 undone)", "step_task_group/generic_group"),
    ("no depot (Step 10)", "step_task_group/no_node_depot"),
    ("no batched steals (Step 11)", "step_task_group/no_steal_batch"),
]


def cell_name(family, cell):
    threads, rounds, n = cell
    return f"{family}/threads:{threads}/rounds:{rounds}/n:{n}/real_time"


def load(paths):
    """name -> list of per-repetition values (seconds per task), and the fib rows' counters."""
    per_task, fib, context = {}, {}, None
    for path in paths:
        data = json.load(open(path))
        context = context or data.get("context", {})
        for b in data["benchmarks"]:
            if b.get("run_type") != "iteration":
                continue
            name = b["run_name"]
            if "s_per_task" in b:
                per_task.setdefault(name, []).append(b["s_per_task"])
            if "fork_per_call" in b:
                fib.setdefault(name, []).append((b["s_per_fork"], b["s_per_call"], b["fork_per_call"]))
    return per_task, fib, context


def ns(values):
    return statistics.median(values) * 1e9


def label(cell):
    threads, rounds, n = cell
    return f"{threads} thread{'s' if threads > 1 else ''}, {rounds:,} x {n:,}"


def ratio_table(per_task, title, columns, ref_family):
    """Rows: the cells; columns: (title, family); each value beside the ref_family row's."""
    out = [f"| {title} | " + " | ".join(t for t, _ in columns) + " |",
           "| --- |" + " ---: |" * len(columns)]
    for cell in CELLS:
        ref = per_task.get(cell_name(ref_family, cell))
        cols = []
        for _, family in columns:
            v = per_task.get(cell_name(family, cell))
            text = f"{ns(v):.0f}" if v else ""
            if v and ref and family != ref_family:
                text += f" ({ns(v) / ns(ref):.2f}×)"
            cols.append(text)
        out.append(f"| {label(cell)} | " + " | ".join(cols) + " |")
    return out


def tables(per_task, fib, main_only=False):
    out = ratio_table(per_task, "ns per task (× oneTBB)", MAIN, "tbb_task_group")
    if main_only:
        return out
    out.append("")
    out += ratio_table(per_task, "`TaskGroup`, ns per task (× all steps)", STEPS, STEPS[0][1])
    if fib:
        out.append("")
        out.append("| fib(30) by `join` | ns per fork | ns per sequential call | fork / call |")
        out.append("| --- | ---: | ---: | ---: |")
        for name in sorted(fib):
            rows = fib[name]
            threads = re.search(r"threads:(\d+)", name).group(1)
            out.append(
                f"| {threads} thread{'s' if threads != '1' else ''} | "
                f"{statistics.median(r[0] for r in rows) * 1e9:.1f} | "
                f"{statistics.median(r[1] for r in rows) * 1e9:.2f} | "
                f"{statistics.median(r[2] for r in rows):.1f} |")
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("json", nargs="+")
    parser.add_argument("--update", metavar="MARKDOWN")
    args = parser.parse_args()
    per_task, fib, context = load(args.json)
    reps = {len(v) for v in per_task.values()}
    dirs = {os.path.dirname(os.path.relpath(p)) for p in args.json}
    files = (os.path.join(dirs.pop(), "spawn_*.json") if len(dirs) == 1 else
             " ".join(os.path.relpath(p) for p in args.json))
    footer = (f"<sub>Medians of {len(args.json)} processes x {min(reps) // len(args.json)} "
              f"repetitions, {context.get('num_cpus', '?')} CPUs; "
              f"`python3 stage5_parallel_algos/bench/spawn_table.py {files}` (its docstring "
              f"has the runs)</sub>")
    print("\n".join(tables(per_task, fib) + ["", footer]))
    if not args.update:
        return
    text = "\n".join(tables(per_task, fib, main_only=True) + ["", footer])
    doc = open(args.update).read()
    pattern = re.compile(r"(<!-- spawn-table -->\n)(?:.*?\n)?(<!-- /spawn-table -->)", re.S)
    if not pattern.search(doc):
        sys.exit(f"{args.update}: no <!-- spawn-table --> markers")
    doc = pattern.sub(lambda m: m.group(1) + text + "\n" + m.group(2), doc)
    open(args.update, "w").write(doc)


if __name__ == "__main__":
    main()
