#!/usr/bin/env python3
"""Checks the include structure that the chapters describe, so that it cannot drift silently.

  1. A stage includes only common/ and earlier stages (a later stage never shapes an earlier one),
     and no library file includes the lab's registry/ or labs/ (tests, demos and benchmarks may).
  2. Stage 5's layers above the scheduler (fork_join/, futures/, algorithms/, coro/) include exactly one
     header of scheduler/: its port, scheduler/port.hpp.
  3. The library (common/ and stage 5, tests left out) declares at most four thread_local
     variables: what a thread is lives in one record per layer (stage5_parallel_algos/README.md,
     "The fork-join layer").

Usage: python3 scripts/check_layers.py [ROOT]   (prints what it checked; exit status 1 on a breach)
"""
from __future__ import annotations

import os
import pathlib
import re
import sys

STAGES = ["stage1_global_lock", "stage2_per_thread_mutex", "stage3_lock_wsq", "stage4_chase_lev",
          "stage5_parallel_algos"]
ABOVE_SCHEDULER = ["fork_join", "futures", "algorithms", "coro"]
PORT = "scheduler/port.hpp"
MAX_THREAD_LOCALS = 4
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# A declaration, not a word in a comment: the keyword at a statement's start or after
# inline/static.
THREAD_LOCAL = re.compile(r'^\s*(?:(?:inline|static)\s+)*thread_local\b', re.M)


def library_files(root: pathlib.Path, folder: str) -> list[pathlib.Path]:
    """Headers of a library folder, without its tests, demos and lab helpers."""
    skip = {"tests", "demos"}
    return sorted(p for p in (root / folder).rglob("*.hpp")
                  if not skip.intersection(p.relative_to(root / folder).parts[:-1]))


def includes(root: pathlib.Path, path: pathlib.Path) -> list[str]:
    """The repository-relative targets of a file's quoted includes."""
    out = []
    for target in INCLUDE.findall(path.read_text()):
        beside = pathlib.Path(os.path.normpath(path.parent / target))
        from_root = pathlib.Path(os.path.normpath(root / target))  # as tests write them
        resolved = from_root if not beside.exists() and from_root.exists() else beside
        out.append(os.path.relpath(resolved, root))
    return out


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                        pathlib.Path(__file__).resolve().parent.parent)
    problems: list[str] = []

    # 1. Stages look only backwards; nothing in the library reaches the lab.
    checked = 0
    for folder in ["common"] + STAGES:
        allowed = {"common"} | set(STAGES[:STAGES.index(folder) + 1] if folder in STAGES else [])
        for path in library_files(root, folder):
            checked += 1
            for target in includes(root, path):
                top = target.split("/")[0]
                if top in ("registry", "labs", "harness") or (
                        (top in STAGES or top == "common") and top not in allowed):
                    problems.append(f"{path.relative_to(root)} includes {target}")
    print(f"check_layers: {checked} library headers include only common/ and earlier stages")

    # 2. One port between the scheduler and the layers above it.
    stage5 = root / "stage5_parallel_algos"
    for layer in ABOVE_SCHEDULER:
        for path in sorted((stage5 / layer).glob("*.hpp")):
            for target in includes(root, path):
                if target.startswith("stage5_parallel_algos/scheduler/") and \
                        target != f"stage5_parallel_algos/{PORT}":
                    problems.append(f"{path.relative_to(root)} includes {target}, not {PORT}")
    print(f"check_layers: {', '.join(ABOVE_SCHEDULER)} include no scheduler header but {PORT}")

    # 3. Few thread-locals.
    found = []
    for folder in ("common", "stage5_parallel_algos"):
        for path in library_files(root, folder):
            text = re.sub(r"//[^\n]*", "", path.read_text())
            found += [f"{path.relative_to(root)}" for _ in THREAD_LOCAL.finditer(text)]
    print(f"check_layers: {len(found)} thread_local variables in the library: {', '.join(found)}")
    if len(found) > MAX_THREAD_LOCALS:
        problems.append(f"{len(found)} thread_local variables, more than {MAX_THREAD_LOCALS}")

    for p in problems:
        print(f"check_layers: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
