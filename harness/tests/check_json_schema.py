#!/usr/bin/env python3
"""Checks lab_bench's JSON document against its contract in harness/README.md.

The contract is read from the README itself: the section "## The JSON document (schema_version N)"
gives the version, and its tables give one row per field: `path` | type | present | meaning.
So the test and the documentation cannot drift apart: a documented field that the document lacks,
a field of the wrong type, a field present when the contract says it is not, and a field the
tables do not mention all fail.

  check_json_schema.py [--readme README.md] FILE.json     check a file ("-": stdin)
  check_json_schema.py [--readme README.md] [--every-field] -- LAB_BENCH ARGS...
      run lab_bench (its ARGS should include `--json -`), require exit code 0, and check that its
      stdout is the JSON document and nothing else; with --every-field, also that the run
      produced every documented field (ctest lab_bench.json_schema chooses such a run)

Once the document passes, the checker checks itself on it: the document with each documented
field removed in turn, and with an undocumented field added, must be rejected (a checker that let
a missing field through would pass forever). Exit code 0: the document keeps the contract; 1: it does not.
Standard library only.
"""
from __future__ import annotations

import argparse
import copy
import json
import math
import pathlib
import re
import subprocess
import sys

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
SECTION = re.compile(r"^## The JSON document \(schema_version (\d+)\)\s*$", re.MULTILINE)
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|", re.MULTILINE)
REFERENCES = ("oneTBB", "std::async")
STATUSES = ("ok", "FAILED", "skipped")


def is_integer(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v) -> bool:
    return is_integer(v) or (isinstance(v, float) and math.isfinite(v))


TYPES = {
    "integer": is_integer,
    "number": is_number,
    "string": lambda v: isinstance(v, str),
    "object": lambda v: isinstance(v, dict),
    "array of objects": lambda v: isinstance(v, list) and all(isinstance(e, dict) for e in v),
    "array of numbers": lambda v: isinstance(v, list) and all(is_number(e) for e in v),
}
PRESENCE = ("always", "when ok", "pools, when ok", "with baseline")


class Field:
    def __init__(self, path: str, type_: str, present: str):
        self.path, self.type, self.present = path, type_, present
        self.children: dict[str, Field] = {}


def read_contract(readme: pathlib.Path) -> tuple[int, Field]:
    """The documented version and the tree of documented fields (the root is the document)."""
    text = readme.read_text(encoding="utf-8")
    m = SECTION.search(text)
    if not m:
        raise SystemExit(f"{readme}: no section '## The JSON document (schema_version N)'")
    end = text.find("\n## ", m.end())
    section = text[m.end():end if end >= 0 else len(text)]
    root = Field("", "object", "always")
    rows = ROW.findall(section)
    if not rows:
        raise SystemExit(f"{readme}: the JSON section documents no fields")
    for path, type_, present in rows:
        if type_ not in TYPES:
            raise SystemExit(f"{readme}: `{path}`: unknown type {type_!r} (known: {list(TYPES)})")
        if present not in PRESENCE:
            raise SystemExit(f"{readme}: `{path}`: unknown presence {present!r} "
                             f"(known: {list(PRESENCE)})")
        parts = path.replace("[]", "").split(".")
        parent = root
        for p in parts[:-1]:
            if p not in parent.children:
                raise SystemExit(f"{readme}: `{path}` is documented before its parent `{p}`")
            parent = parent.children[p]
        if parts[-1] in parent.children:
            raise SystemExit(f"{readme}: `{path}` is documented twice")
        parent.children[parts[-1]] = Field(path, type_, present)
    return int(m.group(1)), root


def expected_present(field: Field, record: dict, doc: dict) -> bool:
    """Whether `field` must be in `record` (its enclosing object) according to the contract."""
    if field.present == "always":
        return True
    ok = record.get("status") == "ok"
    if field.present == "when ok":
        return ok
    if field.present == "pools, when ok":
        return ok and record.get("executor") not in REFERENCES
    # "with baseline"
    if not ok or record.get("threads") == 0:
        return False
    baseline = doc.get("run", {}).get("baseline")
    for b in doc.get("results", []):
        same = all(b.get(k) == record.get(k) for k in ("workload", "cell", "threads"))
        if same and b.get("executor") == baseline:
            return b.get("status") == "ok" and b.get("throughput", {}).get("median", 0) > 0
    return False


def check_object(obj: dict, node: Field, record: dict, doc: dict, where: str,
                 errors: list[str]) -> None:
    for key in obj:
        if key not in node.children:
            errors.append(f"{where}{key}: not documented in harness/README.md")
    for key, field in node.children.items():
        must = expected_present(field, record, doc)
        if key not in obj:
            if must:
                errors.append(f"{where}{key}: missing ({field.type}, present: {field.present})")
            continue
        if not must:
            errors.append(f"{where}{key}: present, but the contract says {field.present!r} "
                          f"and this record does not qualify")
        value = obj[key]
        if not TYPES[field.type](value):
            errors.append(f"{where}{key}: {json.dumps(value)[:60]} is not of type {field.type}")
            continue
        if field.type == "object":
            check_object(value, field, record, doc, f"{where}{key}.", errors)
        elif field.type == "array of objects":
            for i, element in enumerate(value):
                check_object(element, field, element, doc, f"{where}{key}[{i}].", errors)


def check_meaning(doc: dict, errors: list[str]) -> None:
    """The few documented facts that a type cannot express."""
    run = doc.get("run", {})
    for i, r in enumerate(doc.get("results", [])):
        where = f"results[{i}] ({r.get('workload')} / {r.get('cell')} / {r.get('executor')} / " \
                f"{r.get('threads')}): "
        status = r.get("status")
        if status not in STATUSES:
            errors.append(f"{where}status {status!r} is not one of {STATUSES}")
        if (status == "FAILED") != bool(r.get("failure")):
            errors.append(f"{where}failure must be non-empty exactly when status is FAILED")
        if status != "ok":
            continue
        if r.get("processes") != run.get("processes"):
            errors.append(f"{where}processes {r.get('processes')} != run.processes")
        samples = r.get("samples_seconds", [])
        if len(samples) != run.get("processes", 0) * run.get("repetitions", 0):
            errors.append(f"{where}{len(samples)} samples_seconds, expected run.processes x "
                          f"run.repetitions")
        for summary in ("throughput", "seconds"):
            s = r.get(summary, {})
            if not s.get("min", 0) <= s.get("median", 0) <= s.get("max", 0):
                errors.append(f"{where}{summary}: not min <= median <= max: {s}")
        if r.get("executor") == run.get("baseline") and "speedup_over_baseline" in r \
                and r["speedup_over_baseline"] != 1:
            errors.append(f"{where}the baseline's speedup over itself is not 1")


def validate(doc, version: int, root: Field) -> list[str]:
    if not isinstance(doc, dict):
        return ["the document is not a JSON object"]
    errors: list[str] = []
    check_object(doc, root, doc, doc, "", errors)
    if doc.get("schema_version") != version:
        errors.append(f"schema_version is {doc.get('schema_version')!r}; harness/README.md "
                      f"documents {version}")
    check_meaning(doc, errors)
    return errors


def self_test(doc: dict, version: int, root: Field, every_field: bool) -> list[str]:
    """Removes each documented field the document holds, in turn: each removal must be caught,
    and so must an undocumented field. With `every_field`, the document must hold every
    documented field (the run exercised every case of the contract)."""
    problems = []

    def holders(obj: dict, node: Field):
        # (enclosing object, key, documented field) for every documented field in the document.
        for key, field in node.children.items():
            if key not in obj:
                continue
            yield obj, key, field
            if field.type == "object":
                yield from holders(obj[key], field)
            elif field.type == "array of objects":
                for element in obj[key]:
                    yield from holders(element, field)

    tried = set()
    for index, (_, _, field) in enumerate(list(holders(doc, root))):
        if field.path in tried:
            continue  # its first occurrence is enough
        tried.add(field.path)
        broken = copy.deepcopy(doc)
        holder, key, _ = list(holders(broken, root))[index]
        del holder[key]
        if not validate(broken, version, root):
            problems.append(f"self-test: removing `{field.path}` went unnoticed")
    broken = copy.deepcopy(doc)
    broken["undocumented_field"] = 1
    if not validate(broken, version, root):
        problems.append("self-test: an undocumented field went unnoticed")

    documented = [f.path for f in walk(root) if f.path]
    never = [p for p in documented if p not in tried]
    if every_field and never:
        problems.append("the run never produced " + ", ".join(f"`{p}`" for p in never) +
                        ": choose options that exercise every documented field")
    print(f"self-test: removing any of the {len(tried)} of {len(documented)} documented fields "
          f"this document holds is caught, and so is an undocumented one")
    return problems


def reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def walk(node: Field):
    yield node
    for child in node.children.values():
        yield from walk(child)


def main() -> int:
    argv = sys.argv[1:]
    command: list[str] = []
    if "--" in argv:
        command = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        usage="%(prog)s [--readme README.md] [--every-field] "
              "(FILE.json | - | -- LAB_BENCH ARGS...)")
    parser.add_argument("--readme", type=pathlib.Path, default=README,
                        help="where the contract is (default: harness/README.md)")
    parser.add_argument("--every-field", action="store_true",
                        help="also require the document to hold every documented field")
    parser.add_argument("source", nargs="?", help="a JSON file, or - for stdin")
    args = parser.parse_args(argv)
    if bool(command) == bool(args.source):
        parser.error("give either a JSON file (- for stdin) or -- and the lab_bench command")

    version, root = read_contract(args.readme)
    if command:
        run = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
        if run.returncode != 0:
            print(f"FAIL: {' '.join(command)} exited with {run.returncode}", file=sys.stderr)
            return 1
        text, origin = run.stdout, "stdout of lab_bench"
    else:
        text = sys.stdin.read() if args.source == "-" else pathlib.Path(args.source).read_text()
        origin = args.source
    try:
        doc = json.loads(text, parse_constant=reject_constant)
    except ValueError as e:
        print(f"FAIL: {origin} is not one JSON document (nothing else may be on stdout): {e}\n"
              f"it begins: {text[:200]!r}", file=sys.stderr)
        return 1
    errors = validate(doc, version, root)
    if not errors:
        errors = self_test(doc, version, root, args.every_field)
    for e in errors:
        print(f"FAIL: {e}", file=sys.stderr)
    if errors:
        return 1
    print(f"ok: {origin}: schema_version {version}, {len(doc['results'])} records, every "
          f"documented field present where the contract says, of its type")
    return 0


if __name__ == "__main__":
    sys.exit(main())
