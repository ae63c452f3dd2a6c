#!/usr/bin/env python3
"""Rewrites every generated table in wslab's Markdown files from committed results, so that the
prose and the figures it quotes never drift apart. It is the only table generator: every table in
every document is a pair of markers, and everything between them is regenerated:

    <!-- wslab-table source="harness/results/full.json" workload="grid" cell="tiny 10000x100" -->
    <!-- /wslab-table -->

`kind` says what the source is (default lab_bench):

  kind="lab_bench"  a lab_bench --json file. Attributes: workload, cell (required); executors,
                    threads (comma-separated, to choose and order rows and columns). Each row is an
                    executor, each column a thread count; a cell shows the median throughput, its
                    range over all repetitions and the speedup over the run's baseline. A column
                    with more threads than the machine has hardware threads is marked "*"; a line
                    under the table names the machine and the command that made the output.
  kind="spawn"      a summary of stage5_spawn_bench runs (made by --spawn-summary below):
                    harness/results/stage5_spawn.json for the attribute rows= patterns (default;
                    TaskGroup, spawn and spawn from outside beside oneTBB), coro or steps (the step
                    rows beside the full scheduler); harness/results/stage5_fib.json for rows=fib
                    (fib(30) by join, by WorkerRef::join and by co_join against the sequential fib).
  kind="lab_claims" the lab's claims (scripts/lab_claims.py --json); source may be a glob, one file
                    per machine.

Usage:
  python3 scripts/update_docs.py [--check] [FILE.md ...]   (default: every tracked *.md)
      --check  exit 1 if a file would change (CI runs it to keep committed docs in sync)
  python3 scripts/update_docs.py --spawn-summary OUT.json RAW.json...
      the medians of stage5_spawn_bench --benchmark_out files (one per process), for kind="spawn":
      the runs of SPAWN_COMMAND or of FIB_COMMAND (below), each summary's `command` field
  python3 scripts/update_docs.py --algos-table RAW.json [POOL]
      prints stage5_algos_bench's rows (run with --benchmark_repetitions=N) beside oneTBB's
"""
from __future__ import annotations

import argparse
import glob
import json
import pathlib
import re
import shlex
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"(<!-- wslab-table (?P<attrs>[^>]*?)-->)(?P<body>.*?)(<!-- /wslab-table -->)",
                   re.DOTALL)
ATTR = re.compile(r'(\w+)="([^"]*)"')


def si(value: float) -> str:
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {suffix}"
    return f"{value:.3g} "


def render_lab_bench(attrs: dict[str, str]) -> str:
    for required in ("workload", "cell"):
        if required not in attrs:
            raise SystemExit(f"wslab-table marker without {required}=: {attrs}")
    path = ROOT / attrs["source"]
    data = json.loads(path.read_text())
    run = data["run"]
    rows = [r for r in data["results"]
            if r["workload"] == attrs["workload"] and r["cell"] == attrs["cell"]]
    if not rows:
        raise SystemExit(f"{attrs['source']}: no results for {attrs['workload']} / {attrs['cell']}")
    executors = (attrs["executors"].split(",") if "executors" in attrs
                 else list(dict.fromkeys(r["executor"] for r in rows)))
    threads = ([int(t) for t in attrs["threads"].split(",")] if "threads" in attrs
               else sorted({r["threads"] for r in rows if r["threads"] != 0}))
    unit = rows[0]["unit"]
    cores = run["hardware_threads"]

    def column(t: int) -> str:
        # More threads than the machine runs at once: marked, and explained under the table.
        return f"{t} thread{'s' if t != 1 else ''}" + ("*" if t > cores else "")

    out = ["", f"| {unit}/s: median (min–max), × {run['baseline']} | "
           + " | ".join(column(t) for t in threads) + " |",
           "| --- |" + " --- |" * len(threads)]
    for executor in executors:
        cells = []
        for t in threads:
            # threads == 0: the executor picks its own threads (std::async); same run everywhere.
            r = next((r for r in rows if r["executor"] == executor and r["threads"] in (t, 0)),
                     None)
            if r is None:
                cells.append("—")
            elif r["status"] != "ok":
                cells.append(f"**{r['status'].upper()}**")
            else:
                tp = r["throughput"]
                text = f"{si(tp['median']).strip()} ({si(tp['min']).strip()}–{si(tp['max']).strip()})"
                if "speedup_over_baseline" in r:
                    text += f", {r['speedup_over_baseline']:.2f}×"
                cells.append(text)
        out.append(f"| `{executor}` | " + " | ".join(cells) + " |")
    notes = sorted({r["note"] for r in rows if r.get("note") and r["executor"] in executors})
    out.append("")
    out.append(f"<sub>{run['cpu_model']}, {run['hardware_threads']} hardware threads, "
               f"{run['processes']} processes × {run['repetitions']} "
               f"repetitions per configuration; `{run['command_line']}`"
               + "".join(f"; {n}" for n in notes)
               + ("; * oversubscribed: more threads than cores" if max(threads) > cores else "")
               + (f"; load average {run['load_average_end']:.1f}: compare within a column"
                  if run.get("load_average_end", 0) > cores else "")
               + "</sub>")
    out.append("")
    return "\n".join(out)


# ---- kind="spawn": stage5_spawn_bench, summarised -----------------------------------------------

SPAWN_CELLS = [  # (threads, rounds, n), in the order of the tables' rows
    (1, 1, 1000000),
    (1, 1000, 1000),
    (2, 1, 1000000),
    (2, 1000, 1000),
]
SPAWN_ROWS = {  # rows= -> (title, reference family, [(column title, benchmark family)])
    "patterns": ("ns per task (× oneTBB)", "tbb_task_group", [
        ("`TaskGroup`", "wslab_task_group"),
        ("`TaskGroup` on the heap", "wslab_task_group_on_heap"),
        ("`spawn` + `wait_all`", "wslab_spawn"),
        ("`spawn` from outside", "wslab_external"),
        ("oneTBB `task_group`", "tbb_task_group")]),
    "coro": ("ns per task (× `TaskGroup`)", "wslab_task_group", [
        ("`TaskGroup`", "wslab_task_group"),
        ("`co_join` of n `CoTask`s", "wslab_co_join")]),
    "steps": ("`TaskGroup`, ns per task (× all steps)", "step_task_group/full", [
        ("all steps", "step_task_group/full"),
        ("generic group (Step 9 undone)", "step_task_group/generic_group"),
        ("no depot (Step 10)", "step_task_group/no_node_depot"),
        ("no batched steals (Step 11)", "step_task_group/no_steal_batch"),
        ("no tiny steals (Step 16)", "step_task_group/no_tiny_steals"),
        ("no group jobs (Step 17)", "step_task_group/no_group_jobs")]),
}
FIB_ROWS = [("fib_join_vs_call", "`pool.join`"), ("fib_worker_ref_vs_call", "`WorkerRef::join`"),
            ("fib_co_join_vs_call", "`co_join` of two `CoTask`s")]


def stage5_spawn_command(rows: str, summary: str, raw: str, extra: str = "") -> str:
    """Three processes of stage5_spawn_bench's `rows` (a --benchmark_filter), summarised."""
    return (f"for p in 1 2 3; do build/release/harness/stage5_spawn_bench --benchmark_repetitions=5 "
            f"--benchmark_min_time=0.2 {extra}'--benchmark_filter={rows}' "
            f"--benchmark_out=/tmp/{raw}_$p.json; done; "
            f"python3 scripts/update_docs.py --spawn-summary harness/results/{summary} "
            f"/tmp/{raw}_*.json")


# The spawn-many rows and the fib rows are two summaries: the fib rows (about a minute) can be
# measured again without the spawn cells (nine minutes), whose prose follows one machine's figures.
# The spawn cells' repetitions run in a random order, so that a spell of a noisy host slows a few
# repetitions of many rows rather than every repetition of the rows it falls on (the steps table
# divides rows by one another); the fib rows each time a run beside a sequential one already.
SPAWN_COMMAND = stage5_spawn_command("-(vs_call|step_fib)", "stage5_spawn.json", "spawn",
                                     "--benchmark_enable_random_interleaving=true ")
FIB_COMMAND = stage5_spawn_command("vs_call|step_fib", "stage5_fib.json", "fib")


def lscpu_model() -> str:
    """lscpu's model name, with family and model (one name covers several generations)."""
    fields = {}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown CPU"
    for line in out.splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    name = fields.get("Model name", "unknown CPU")
    if "CPU family" in fields and "Model" in fields:
        name += f" (family {fields['CPU family']}, model {fields['Model']})"
    return name


def spawn_summary(out: str, raws: list[str]) -> None:
    """The medians over every repetition of every process: all the tables need, in a few lines
    instead of every repetition's record."""
    per_task, fib, context = {}, {}, None
    for path in raws:
        data = json.loads(pathlib.Path(path).read_text())
        context = context or data.get("context", {})
        for b in data["benchmarks"]:
            if b.get("run_type") != "iteration":
                continue
            name = b["run_name"]
            if "s_per_task" in b:
                per_task.setdefault(name, []).append(b["s_per_task"])
            if "fork_per_step" in b:
                fib.setdefault(name, []).append(b)
    if bool(per_task) == bool(fib):
        raise SystemExit("--spawn-summary: the runs of one of SPAWN_COMMAND or FIB_COMMAND, not "
                         + ("both" if per_task else "neither") + ": " + " ".join(raws))
    measured = per_task or fib
    summary = {
        "about": "stage5_spawn_bench: medians over every repetition of every process",
        "command": SPAWN_COMMAND if per_task else FIB_COMMAND,
        "processes": len(raws),
        "repetitions": min(len(v) for v in measured.values()) // len(raws),
        "num_cpus": context.get("num_cpus"),
        "cpu": lscpu_model(),
    }
    if per_task:
        summary["s_per_task_median"] = {k: statistics.median(v) for k, v in sorted(per_task.items())}
    else:
        summary["fib_median"] = {k: {field: statistics.median(r[field] for r in rows)
                                     for field in ("s_per_fork", "s_per_step", "fork_per_step")}
                                 for k, rows in sorted(fib.items())}
    pathlib.Path(out).write_text(json.dumps(summary, indent=1) + "\n")


def render_spawn(attrs: dict[str, str]) -> str:
    data = json.loads((ROOT / attrs["source"]).read_text())
    rows = attrs.get("rows", "patterns")
    wanted = "fib_median" if rows == "fib" else "s_per_task_median"
    if wanted not in data:
        raise SystemExit(f"kind=\"spawn\" rows=\"{rows}\": {attrs['source']} has no {wanted} "
                         "(rows=fib reads harness/results/stage5_fib.json, the others "
                         "harness/results/stage5_spawn.json)")
    per_task = data.get("s_per_task_median", {})
    out = [""]
    if rows == "fib":
        out += ["| fib(30) | ns per fork | ns per sequential step | fork / step |",
                "| --- | ---: | ---: | ---: |"]
        # forks="a,b": only those benchmark families, in FIB_ROWS's order.
        wanted = attrs.get("forks", ",".join(f for f, _ in FIB_ROWS)).split(",")
        for family, title in FIB_ROWS:
            if family not in wanted:
                continue
            for name, m in data["fib_median"].items():
                if not name.startswith(family + "/"):
                    continue
                threads = re.search(r"threads:(\d+)", name).group(1)
                out.append(f"| {title}, {threads} thread{'s' if threads != '1' else ''} | "
                           f"{m['s_per_fork'] * 1e9:.1f} | {m['s_per_step'] * 1e9:.2f} | "
                           f"{m['fork_per_step']:.{2 if m['fork_per_step'] < 10 else 1}f} |")
    elif rows in SPAWN_ROWS:
        title, ref_family, columns = SPAWN_ROWS[rows]

        def median_ns(family: str, cell: tuple[int, int, int]) -> float | None:
            threads, rounds, n = cell
            v = per_task.get(f"{family}/threads:{threads}/rounds:{rounds}/n:{n}/real_time")
            return None if v is None else v * 1e9

        out += [f"| {title} | " + " | ".join(t for t, _ in columns) + " |",
                "| --- |" + " ---: |" * len(columns)]
        for cell in SPAWN_CELLS:
            ref = median_ns(ref_family, cell)
            cols = []
            for _, family in columns:
                v = median_ns(family, cell)
                text = "" if v is None else f"{v:.0f}"
                if v is not None and ref and family != ref_family:
                    text += f" ({v / ref:.2f}×)"
                cols.append(text)
            threads, rounds, n = cell
            out.append(f"| {threads} thread{'s' if threads > 1 else ''}, {rounds:,} x {n:,} | "
                       + " | ".join(cols) + " |")
    else:
        raise SystemExit(f"kind=\"spawn\": rows= is patterns, coro, steps or fib, not {rows!r}")
    cpu = f"{data['cpu']}, " if "cpu" in data else ""
    out += ["", f"<sub>Medians of {data['processes']} processes x {data['repetitions']} "
                f"repetitions, {cpu}{data['num_cpus']} CPUs; from `{attrs['source']}` (its `command` "
                f"field makes it)</sub>", ""]
    return "\n".join(out)


# ---- kind="lab_claims": scripts/lab_claims.py's runs --------------------------------------------

def render_lab_claims(attrs: dict[str, str]) -> str:
    sys.path.insert(0, str(ROOT / "scripts"))
    import lab_claims  # the claims and how each is judged live there, next to the measurements
    paths = sorted(glob.glob(str(ROOT / attrs["source"])))
    if not paths:
        raise SystemExit(f"kind=\"lab_claims\": no file matches {attrs['source']}")
    return "\n" + lab_claims.render([json.loads(pathlib.Path(p).read_text()) for p in paths]) + "\n"


# ---- kind="algos" is printed, not committed: stage5_algos_bench's rows against oneTBB ----------

ALGOS_REFERENCE = {  # group -> the oneTBB row the ratio is taken against
    "fib30": "fib30/tbb_parallel_invoke",
    "parallel_for": "parallel_for/tbb",
    "parallel_reduce": "parallel_reduce/tbb",
    "parallel_transform_reduce": "parallel_transform_reduce/tbb",
    "parallel_inclusive_scan": "parallel_inclusive_scan/tbb",
    "sort10M": "sort10M/tbb_parallel_sort",
    # oneTBB has no stable sort; libstdc++'s parallel std::stable_sort runs on it.
    "stable_sort10M": "stable_sort10M/std_stable_sort_par",
}


def algos_table(raw: str, pool: str) -> str:
    data = json.loads(pathlib.Path(raw).read_text())
    medians = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        name = b["run_name"].split("/process_time")[0].split("/real_time")[0]
        medians[name] = b["real_time"]  # milliseconds (the benchmark's unit)
    out = ["| row | median wall time (ms) | / oneTBB |", "| --- | ---: | ---: |"]
    # Grouped by benchmark (random interleaving writes them in run order).
    for name, ms in sorted(medians.items(), key=lambda item: item[0].split("/")[0]):
        group = name.split("/")[0]
        ref = medians.get(ALGOS_REFERENCE.get(group, ""))
        ratio = f"{ms / ref:.2f}" if ref and name != ALGOS_REFERENCE[group] else ""
        mark = " **(compared)**" if name.endswith(pool) else ""
        extra = f" ({ms * 1e6 / 1346268:.1f} ns/fork)" if group == "fib30" else ""  # fib(31)-1
        out.append(f"| `{name}`{mark} | {ms:.1f}{extra} | {ratio} |")
    return "\n".join(out)


# ---- the documents -------------------------------------------------------------------------------

RENDER = {"lab_bench": render_lab_bench, "spawn": render_spawn, "lab_claims": render_lab_claims}


def update(text: str, where: str) -> str:
    def replace(m: re.Match[str]) -> str:
        attrs = dict(ATTR.findall(m.group("attrs")))
        kind = attrs.get("kind", "lab_bench")
        if kind not in RENDER or "source" not in attrs:
            raise SystemExit(f"{where}: a wslab-table marker needs source= and a kind= of "
                             f"{', '.join(RENDER)}: {m.group(1)}")
        return m.group(1) + RENDER[kind](attrs) + m.group(4)
    return BLOCK.sub(replace, text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--spawn-summary", metavar="OUT.json")
    parser.add_argument("--algos-table", metavar="RAW.json")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    if args.spawn_summary:
        spawn_summary(args.spawn_summary, args.files)
        return 0
    if args.algos_table:
        print(algos_table(args.algos_table, args.files[0] if args.files else "stage4_chase_lev"))
        return 0
    files = [pathlib.Path(f) for f in args.files] or [
        ROOT / f for f in subprocess.run(["git", "-C", str(ROOT), "ls-files", "*.md"],
                                         capture_output=True, text=True, check=True).stdout.split()]
    stale = []
    for f in files:
        old = f.read_text()
        new = update(old, str(f))
        if new != old:
            stale.append(str(f))
            if not args.check:
                f.write_text(new)
    if args.check and stale:
        print("tables out of date (run python3 scripts/update_docs.py):", *stale, file=sys.stderr)
        return 1
    for f in stale:
        print(f"updated {shlex.quote(f)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
