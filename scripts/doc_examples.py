#!/usr/bin/env python3
"""Writes each marked example of the given Markdown files to <out_dir>/<name>.cpp.

A marked example is a ```cpp block right after a line `<!-- example: <name> -->`; it must be a
whole program (the test suite compiles and runs it). Prints the names, one per line, for CMake.
"""
import pathlib
import re
import sys

MARK = re.compile(r"^<!-- example: ([A-Za-z0-9_]+) -->\s*$")


def examples(path):
    lines = pathlib.Path(path).read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        mark = MARK.match(lines[i])
        i += 1
        if not mark:
            continue
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i >= len(lines) or lines[i].strip() != "```cpp":
            sys.exit(f"{path}: example {mark.group(1)} is not followed by a ```cpp block")
        start = i + 1
        end = start
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        yield mark.group(1), "\n".join(lines[start:end]) + "\n"
        i = end + 1


def main():
    out_dir = pathlib.Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    seen = set()
    for md in sys.argv[2:]:
        for name, code in examples(md):
            if name in seen:
                sys.exit(f"{md}: example name {name} is used twice")
            seen.add(name)
            target = out_dir / f"{name}.cpp"
            text = f"// Extracted from {pathlib.Path(md).name} by scripts/doc_examples.py.\n{code}"
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                target.write_text(text, encoding="utf-8")
            print(name)


if __name__ == "__main__":
    main()
