#!/usr/bin/env python3
"""Checks an installed wslab (cmake --install) holds the library and nothing else.

    python3 scripts/check_install.py <prefix>

The library's entry points are the public header (wslab/threadpool.hpp) and each stage's pool
(wslab/stage<N>_<name>/*_pool.hpp, and the interface every pool implements,
wslab/common/thread_pool.hpp). Every installed header must be reached from one of them by
following its #include "..." lines: a header that no public header includes is one that only the
tests, the labs, the harness or the demos use, and it stays in the source tree. Every include of a
wslab header must also find an installed file, and the pkg-config file must be there.
Exits 1 with the offending files named.
"""
from __future__ import annotations

import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    prefix = pathlib.Path(sys.argv[1]).resolve()
    top = prefix / "include" / "wslab"
    if not (top / "threadpool.hpp").is_file():
        print(f"check_install: no wslab/threadpool.hpp under {prefix}/include", file=sys.stderr)
        return 1
    installed = {p.resolve() for p in top.rglob("*") if p.is_file()}
    roots = [top / "threadpool.hpp", top / "common" / "thread_pool.hpp",
             *sorted(top.glob("stage*/*_pool.hpp"))]

    problems: list[str] = []
    reached: set[pathlib.Path] = set()
    stack = [r.resolve() for r in roots]
    while stack:
        header = stack.pop()
        if header in reached:
            continue
        reached.add(header)
        for name in INCLUDE.findall(header.read_text()):
            target = (header.parent / name).resolve()
            if target.is_file():
                stack.append(target)
            else:
                problems.append(f"{header.relative_to(top)} includes \"{name}\", not installed")

    for extra in sorted(installed - reached):
        problems.append(f"{extra.relative_to(top)} is installed but no public header includes it "
                        "(a test, lab or demo header: keep it in the source tree)")
    pc = list(prefix.glob("*/pkgconfig/wslab.pc")) + list(prefix.glob("*/*/pkgconfig/wslab.pc"))
    if not pc:
        problems.append("no pkgconfig/wslab.pc under the prefix")

    for p in problems:
        print(f"check_install: {p}", file=sys.stderr)
    if problems:
        return 1
    print(f"check_install: {len(installed)} headers, each reached from a public one; {pc[0].name} "
          "installed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
