#!/usr/bin/env python3
"""Checks a Chrome trace written by wslab::trace::Recorder::write_chrome_trace().

  check_chrome_trace.py TRACE.json [--tasks N]
      parses the file with Python's json module and checks the structure chrome://tracing and
      Perfetto rely on; with --tasks, that exactly N task spans are in it.
  check_chrome_trace.py --run TRACE_DEMO OUT_PREFIX
      runs trace_demo on every pool it knows with a small grid, then checks each trace, its task
      count (E * (1 + R)) and that the timeline PNGs were written.
"""
import json
import os
import subprocess
import sys

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def check(path, tasks=None):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)  # raises on malformed JSON
    assert isinstance(doc, dict), "top level must be an object"
    events = doc["traceEvents"]
    assert isinstance(events, list) and events, "traceEvents must be a non-empty list"
    other = doc["otherData"]
    for key in ("recorded_events", "dropped_events", "duration_ns"):
        assert isinstance(other[key], int) and other[key] >= 0, key
    named = set()
    tracks = set()
    task_spans = 0
    for e in events:
        ph = e["ph"]
        assert isinstance(e["pid"], int), e
        if ph == "M":
            assert e["name"] in ("process_name", "process_sort_index", "thread_name",
                                 "thread_sort_index"), e
            if e["name"] == "thread_name":
                named.add((e["pid"], e["tid"]))
            continue
        assert ph in ("X", "i"), e
        assert isinstance(e["tid"], int) and e["tid"] > 0, e
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        tracks.add((e["pid"], e["tid"]))
        if ph == "X":
            assert e["dur"] >= 0, e
            assert e["cat"] in ("task", "park"), e
            task_spans += e["cat"] == "task"
        else:
            assert e["s"] == "t" and isinstance(e["args"]["victim"], int), e
    assert tracks <= named, f"tracks without a name: {tracks - named}"
    if tasks is not None:
        assert task_spans == tasks, f"{task_spans} task spans, expected {tasks}"
    return task_spans, other["dropped_events"]


def run_demo(demo, prefix):
    names = subprocess.run([demo, "--list-pools"], capture_output=True, text=True,
                           check=True).stdout.split()
    assert names, "trace_demo knows no pool"
    external, recursive = 20, 30
    for name in names:
        out = f"{prefix}_{name}"
        subprocess.run([demo, "--pool", name, "-E", str(external), "-R", str(recursive),
                        "--spin-ns", "500", "--zoom-us", "20", "--out", out], check=True)
        spans, dropped = check(out + ".json", external * (1 + recursive))
        assert dropped == 0, f"{name}: {dropped} events dropped"
        for png in (out + ".png", out + "_zoom.png"):
            with open(png, "rb") as f:
                assert f.read(8) == PNG_SIGNATURE, f"{png} is not a PNG"
        print(f"{name}: {spans} task spans, timeline written")


def main(argv):
    if len(argv) == 4 and argv[1] == "--run":
        os.makedirs(os.path.dirname(argv[3]) or ".", exist_ok=True)
        run_demo(argv[2], argv[3])
    elif len(argv) == 2:
        print("%d task spans, %d events dropped" % check(argv[1]))
    elif len(argv) == 4 and argv[2] == "--tasks":
        check(argv[1], int(argv[3]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
