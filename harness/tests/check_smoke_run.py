#!/usr/bin/env python3
"""Checks that WSLAB_LAB_BENCH_SMOKE=1 makes any lab_bench run one process of one repetition with no
warm-up (harness/README.md), and that any other value leaves the run as its options say.

  check_smoke_run.py LAB_BENCH ARGS...

ARGS should include `--json -`, `--processes P`, `--reps R` and `--warmup W` with P and R above 1
and W above 0. LAB_BENCH runs twice, with the variable at "1" and at "0"; the JSON document's
`run` record and every result's samples must match: 1, 1, 0 and one sample per result the first
time, P, R, W and P x R samples the second. Exit code 0 when both do. Standard library only.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys


def option(args: list[str], name: str) -> int:
    return int(args[args.index(name) + 1])


def run(command: list[str], smoke: str) -> dict:
    env = dict(os.environ, WSLAB_LAB_BENCH_SMOKE=smoke)
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"check_smoke_run: exit status {done.returncode} with the variable at {smoke}:\n"
                 f"{done.stderr}")
    return json.loads(done.stdout)


def expect(document: dict, smoke: str, processes: int, reps: int, warmups: int) -> list[str]:
    r = document["run"]
    got = (r["processes"], r["repetitions"], r["warmups"])
    errors = []
    if got != (processes, reps, warmups):
        errors.append(f"variable at {smoke}: processes, repetitions, warm-ups {got}, "
                      f"expected {(processes, reps, warmups)}")
    for result in document["results"]:
        if result["status"] != "ok":
            errors.append(f"variable at {smoke}: a result with status {result['status']}")
        elif len(result["samples_seconds"]) != processes * reps:
            errors.append(f"variable at {smoke}: {len(result['samples_seconds'])} samples, "
                          f"expected {processes * reps}")
    return errors


def main() -> int:
    command = sys.argv[1:]
    processes, reps, warmups = (option(command, n) for n in ("--processes", "--reps", "--warmup"))
    if processes < 2 or reps < 2 or warmups < 1:
        sys.exit("check_smoke_run: give --processes and --reps above 1 and --warmup above 0")
    errors = expect(run(command, "1"), "1", 1, 1, 0)
    errors += expect(run(command, "0"), "0", processes, reps, warmups)
    for e in errors:
        print(f"check_smoke_run: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
