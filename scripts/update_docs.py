#!/usr/bin/env python3
"""Rewrites the measured tables in wslab's Markdown files from the harness's JSON output, so that
the prose and the figures it quotes never drift apart.

A table is a pair of markers in any Markdown file; everything between them is regenerated:

    <!-- wslab-table source="docs/results/main.json" workload="grid" cell="tiny 10000x100" -->
    <!-- /wslab-table -->

Attributes:
  source     the lab_bench JSON file, relative to the repo root (required)
  workload   the workload name (required)
  cell       the cell, as the harness names it (required)
  executors  comma-separated executors to show, in that order (default: all, in the file's order)
  threads    comma-separated thread counts to show (default: all)

Each row is an executor (a pool or a reference), each column a thread count; a cell shows the
median throughput, its range over all repetitions, and the speedup over the run's baseline at the
same thread count. A column with more threads than the machine has hardware threads is marked
"*" as oversubscribed. A line under the table names the machine and the command that made the output, and
explains the mark when a column carries it.

Usage: python3 scripts/update_docs.py [--check] [FILE.md ...]   (default: every tracked *.md)
  --check   exit 1 if a file would change (CI uses it to keep committed docs in sync)
"""
from __future__ import annotations

import argparse
import json
import pathlib
import re
import shlex
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


def render(attrs: dict[str, str]) -> str:
    for required in ("source", "workload", "cell"):
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


def update(text: str) -> str:
    def replace(m: re.Match[str]) -> str:
        attrs = dict(ATTR.findall(m.group("attrs")))
        return m.group(1) + render(attrs) + m.group(4)
    return BLOCK.sub(replace, text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    files = [pathlib.Path(f) for f in args.files] or [
        ROOT / f for f in subprocess.run(["git", "-C", str(ROOT), "ls-files", "*.md"],
                                         capture_output=True, text=True, check=True).stdout.split()]
    stale = []
    for f in files:
        old = f.read_text()
        new = update(old)
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
