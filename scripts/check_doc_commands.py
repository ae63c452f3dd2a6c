#!/usr/bin/env python3
"""Runs every command that labs/README.md and NOTES.md tell a reader to type, exactly as written,
so that the guide and the tutorial never document a command that does not work.

A command is a line of a fenced ```sh block that starts with one of

    bash scripts/    ./build/    ctest    cmake    python3 scripts/    valgrind    callgrind_annotate

(a line ending in a backslash continues on the next one). Other lines of the block (comments,
output shown for reference) are not run. A block whose fence is preceded by the line
`<!-- no-ci -->` is skipped entirely: use it for commands that need a browser, take too long, or
are meant to fail.

Each command runs with `bash -c` from the repository root, in document order, so a later command
may rely on what an earlier one built. A `bash scripts/bench.sh` command runs with
WSLAB_LAB_BENCH_SMOKE=1 in its environment: lab_bench then runs one process of one repetition per
configuration, every result still verified (harness/README.md), since this check shows that the
command works and measures nothing; the lab's figures come from scripts/lab_claims.py. The first
failure stops the run: the command, its exit status and its output are printed. The last line is
always "N passed, M failed".

Before anything else the extractor checks itself on a built-in sample document (self_test()), since
a command it failed to extract would silently never be checked.

Usage: python3 scripts/check_doc_commands.py [--list] [--timeout SECONDS] [FILE.md ...]
  --list      print the commands that would run, with their file and line, and exit
  --timeout   seconds one command may take before it counts as failed (default 900)
  FILE.md     the documents to check (default: labs/README.md NOTES.md; a missing default is
              skipped with a note, a missing explicit file is an error)
"""
from __future__ import annotations

import argparse
import os
import pathlib
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_FILES = ("labs/README.md", "NOTES.md")
PREFIXES = ("bash scripts/", "./build/", "ctest", "cmake", "python3 scripts/", "valgrind",
            "callgrind_annotate")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
NO_CI = "<!-- no-ci -->"
SMOKE_PREFIX = "bash scripts/bench.sh "  # lab_bench runs, made one process of one repetition
OUTPUT_TAIL_LINES = 200  # of a failing command's output; the whole output can be long


class Command:
    def __init__(self, path: pathlib.Path, line: int, text: str):
        self.path, self.line, self.text = path, line, text

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def is_command(line: str) -> bool:
    # A prefix without a slash must be the whole first word: not "cmake-format", not "ctestfoo".
    for prefix in PREFIXES:
        if line.startswith(prefix):
            rest = line[len(prefix):]
            return prefix.endswith("/") or rest == "" or rest[0].isspace()
    return False


def extract(path: pathlib.Path, text: str | None = None) -> list[Command]:
    lines = (path.read_text() if text is None else text).splitlines()
    commands: list[Command] = []
    i = 0
    previous_text = ""  # the last non-blank line before the current one
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            if lines[i].strip():
                previous_text = lines[i].strip()
            i += 1
            continue
        fence, lang, opened_at = m.group(2), m.group(3), i + 1
        skip = lang != "sh" or previous_text == NO_CI
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence[0] * len(fence)):
            text = lines[i].strip()
            start = i
            if not skip and is_command(text):
                while text.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    text = text[:-1].rstrip() + " " + lines[i].strip()
                commands.append(Command(path, start + 1, text))
            i += 1
        if i == len(lines):
            raise SystemExit(f"{path}: a ``` block opened at line {opened_at} is never closed")
        previous_text = lines[i].strip()
        i += 1
    return commands


SELF_TEST_DOC = """\
Text with `cmake --not-a-command` inline.
```sh
bash scripts/a.sh --x   # a comment
echo not a documented command
cmake --build --preset release \\
      --target t
cmakefoo
  ctest -L x
valgrind --tool=callgrind ./build/x
```

<!-- no-ci -->
```sh
bash scripts/skipped.sh
```

```cpp
cmake --in-a-cpp-block
```
~~~sh
python3 scripts/b.py
```
./build/inside/a/tilde/block
~~~
"""
SELF_TEST_EXPECTED = [(3, "bash scripts/a.sh --x   # a comment"),
                      (5, "cmake --build --preset release --target t"),
                      (8, "ctest -L x"),
                      (9, "valgrind --tool=callgrind ./build/x"),
                      (21, "python3 scripts/b.py"),
                      (23, "./build/inside/a/tilde/block")]


def self_test() -> None:
    """The extractor must neither miss a documented command nor invent one: a command it missed
    would never be checked, silently. Runs on every invocation; it takes microseconds."""
    got = [(c.line, c.text) for c in extract(pathlib.Path("self-test.md"), SELF_TEST_DOC)]
    if got != SELF_TEST_EXPECTED:
        raise SystemExit(f"check_doc_commands: self-test failed: extracted {got}, "
                         f"expected {SELF_TEST_EXPECTED}")


def environment_for(c: Command) -> dict[str, str]:
    """The environment a command runs in: lab_bench at its smallest for the lab's bench runs."""
    env = dict(os.environ)
    if c.text.startswith(SMOKE_PREFIX):
        env["WSLAB_LAB_BENCH_SMOKE"] = "1"
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="Markdown files (default: %(default)s)")
    parser.add_argument("--list", action="store_true", help="print the commands and exit")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per command")
    args = parser.parse_args()
    self_test()

    paths: list[pathlib.Path] = []
    for name in args.files or DEFAULT_FILES:
        path = (ROOT / name).resolve()
        if path.is_file():
            paths.append(path)
        elif args.files:
            raise SystemExit(f"check_doc_commands: no such file: {name}")
        else:
            print(f"check_doc_commands: {name} does not exist yet; skipped", file=sys.stderr)

    commands = [c for p in paths for c in extract(p)]
    if args.list:
        for c in commands:
            print(f"{c.where()}: {c.text}")
        print(f"{len(commands)} commands")
        return 0

    passed = 0
    for n, c in enumerate(commands, 1):
        print(f"== [{n}/{len(commands)}] {c.where()}: {c.text}", file=sys.stderr, flush=True)
        start = time.monotonic()
        try:
            done = subprocess.run(["bash", "-c", c.text], cwd=ROOT, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, errors="replace",
                                  timeout=args.timeout, env=environment_for(c))
            status = f"exit status {done.returncode}"
            output, ok = done.stdout, done.returncode == 0
        except subprocess.TimeoutExpired as e:
            status = f"timed out after {args.timeout:.0f} s"
            raw = e.stdout or b""
            output = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
            ok = False
        seconds = time.monotonic() - start
        if not ok:
            tail = output.splitlines()[-OUTPUT_TAIL_LINES:]
            print(f"FAILED ({status}, {seconds:.1f} s): {c.text}\n  documented at {c.where()}\n"
                  f"--- output (last {len(tail)} lines) ---", file=sys.stderr)
            print("\n".join(tail), file=sys.stderr)
            print("---", file=sys.stderr)
            print(f"{passed} passed, 1 failed")
            return 1
        print(f"   ok ({seconds:.1f} s)", file=sys.stderr, flush=True)
        passed += 1
    print(f"{passed} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
