#!/usr/bin/env python3
"""What the trace hooks cost when tracing is off: compiled out vs compiled in but not recording.

  python3 harness/trace/measure_overhead.py BIN_DIR [--rounds 5] [--min-time 0.3] [--no-callgrind]

BIN_DIR holds trace_overhead_bench_{out,in} and trace_hook_cost_{out,in} (build/release/harness/trace
in the release preset). Two measurements:

  1. Wall clock (Google Benchmark): the grid workload on every registered pool and a loop of empty
     tasks, in both binaries. The two binaries run alternately, `rounds` times, so a burst of
     load from other processes hits both; each round reports the median of its repetitions and the
     table shows the median over rounds and the ratio in/out. The `in` binary also times the same
     runs while recording (what a trace costs when it is on). Grid runs are timed by the wall
     clock, the single-thread task loop by its CPU time.
  2. Instructions (callgrind), which do not depend on the machine's load: 1,000,000 empty tasks
     through invoke_task(), whose two hooks are the only difference between the binaries.

Prints a Markdown table for harness/trace/README.md.
"""
import argparse
import json
import os
import pathlib
import platform
import re
import statistics
import subprocess
import sys
import tempfile

# The project's one way of naming the CPU (model name, family and model), beside the tables.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
from update_docs import lscpu_model  # noqa: E402


def run_bench(binary, min_time, repetitions):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([binary, f"--benchmark_min_time={min_time}",
                        f"--benchmark_repetitions={repetitions}",
                        "--benchmark_report_aggregates_only=true",
                        f"--benchmark_out={out.name}", "--benchmark_out_format=json"],
                       check=True, stdout=subprocess.DEVNULL)
        with open(out.name, encoding="utf-8") as f:
            doc = json.load(f)
    medians = {}
    for b in doc["benchmarks"]:
        if b.get("aggregate_name") == "median":
            # Multi-threaded runs are timed by the wall clock (real_time); the single-thread loop
            # by its CPU time, which time stolen by other processes on a shared machine does not
            # inflate.
            key = "real_time" if b["run_name"].endswith("/real_time") else "cpu_time"
            medians[b["run_name"]] = (b[key], b["time_unit"])
    return medians


def callgrind_instructions(binary, tasks):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        "--toggle-collect=run_empty_tasks*", binary, str(tasks)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out, encoding="utf-8") as f:
            for line in f:
                m = re.match(r"(?:summary|totals):\s+(\d+)", line)
                if m:
                    return int(m.group(1))
    raise RuntimeError(f"no instruction total in callgrind output of {binary}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("bin_dir")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--no-callgrind", action="store_true")
    args = ap.parse_args()
    exe = {v: os.path.join(args.bin_dir, f"trace_overhead_bench_{v}") for v in ("out", "in")}
    cost = {v: os.path.join(args.bin_dir, f"trace_hook_cost_{v}") for v in ("out", "in")}

    rounds = {"out": [], "in": []}
    for r in range(args.rounds):
        order = ("out", "in") if r % 2 == 0 else ("in", "out")  # neither always goes first
        for v in order:
            rounds[v].append(run_bench(exe[v], args.min_time, args.repetitions))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)

    def median_over_rounds(variant, name):
        values = [m[name][0] for m in rounds[variant] if name in m]
        return statistics.median(values) if values else None

    names = sorted(rounds["out"][0])
    cpu = lscpu_model()
    print(f"Machine: nproc={os.cpu_count()}, {cpu}, {platform.system()} {platform.release()}; "
          f"{args.rounds} alternating rounds x median of {args.repetitions} repetitions.\n")
    print("| benchmark | compiled out | compiled in, off | ratio off/out | recording | "
          "ratio recording/out |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in names:
        out = median_over_rounds("out", name)
        off = median_over_rounds("in", name)
        rec_name = name.replace("BM_Grid/", "BM_GridRecording/").replace(
            "BM_InvokeTask", "BM_InvokeTaskRecording")
        rec = median_over_rounds("in", rec_name)
        unit = rounds["out"][0][name][1]
        rec_cells = f"{rec:.3f} {unit} | {rec / out:.3f}" if rec is not None else "- | -"
        print(f"| {name} | {out:.3f} {unit} | {off:.3f} {unit} | {off / out:.3f} | {rec_cells} |")

    if not args.no_callgrind:
        tasks = 1_000_000
        ir = {v: callgrind_instructions(cost[v], tasks) for v in ("out", "in")}
        print(f"\ncallgrind, {tasks:,} empty tasks through invoke_task(): compiled out "
              f"{ir['out'] / tasks:.2f} instructions a task, compiled in but off "
              f"{ir['in'] / tasks:.2f} (+{(ir['in'] - ir['out']) / tasks:.2f} a task, i.e. "
              f"{(ir['in'] - ir['out']) / tasks / 2:.2f} a hook).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
