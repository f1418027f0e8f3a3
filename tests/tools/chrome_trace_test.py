#!/usr/bin/env python3
"""Runs the game-loop sample with --trace and checks the Chrome trace it writes: the JSON parses,
begin/end events nest per thread, task and coroutine zones both occur, each id names one task or
one coroutine chain (one name, one kind), and every event has a name.

Usage: chrome_trace_test.py GAME_LOOP_EXECUTABLE TRACE_FILE
"""
import collections
import json
import subprocess
import sys


def fail(message):
    print("chrome_trace_test: FAILED: " + message)
    sys.exit(1)


def main():
    if len(sys.argv) != 3:
        fail("usage: chrome_trace_test.py GAME_LOOP_EXECUTABLE TRACE_FILE")
    executable, path = sys.argv[1], sys.argv[2]
    # Fewer frames than the sample's own run: the trace's shape, not the loop's length, is checked.
    run = subprocess.run([executable, "--trace", path, "--frames", "120"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=280)
    print(run.stdout, end="")
    if run.returncode != 0:
        fail("game-loop exited with %d" % run.returncode)
    with open(path, encoding="utf-8") as file:
        trace = json.load(file)
    events = trace["traceEvents"]
    zones = [e for e in events if e.get("ph") in ("B", "E")]
    if not zones:
        fail("no begin/end events")

    stacks = collections.defaultdict(list)  # tid -> open (name, id, cat)
    identity = {}  # id -> (cat, name)
    kinds = collections.Counter()
    last_ts = collections.defaultdict(float)
    for event in zones:
        for key in ("name", "ph", "ts", "pid", "tid", "cat", "args"):
            if key not in event:
                fail("an event without %r: %r" % (key, event))
        if not event["name"]:
            fail("an event with an empty name: %r" % event)
        tid, ts, key = event["tid"], float(event["ts"]), event["args"]["id"]
        if not isinstance(key, int) or key <= 0:
            fail("an id that is not a positive integer: %r" % event)
        if ts < last_ts[tid]:
            fail("time goes back on thread %r at %r" % (tid, event))
        last_ts[tid] = ts
        zone = (event["name"], key, event["cat"])
        if identity.setdefault(key, (event["cat"], event["name"])) != (event["cat"], event["name"]):
            fail("id %d names both %r and %r" % (key, identity[key], (event["cat"], event["name"])))
        if event["ph"] == "B":
            stacks[tid].append(zone)
            kinds[event["cat"]] += 1
        else:
            if not stacks[tid] or stacks[tid][-1] != zone:
                fail("thread %r ends %r, but its open zone is %r" %
                     (tid, zone, stacks[tid][-1] if stacks[tid] else None))
            stacks[tid].pop()
    for tid, stack in stacks.items():
        if stack:
            fail("thread %r ends the trace inside %r" % (tid, stack))
    if kinds["task"] == 0 or kinds["coroutine"] == 0:
        fail("want both task and coroutine zones, got %r" % dict(kinds))
    tasks = {k for k, (cat, _) in identity.items() if cat == "task"}
    chains = {k for k, (cat, _) in identity.items() if cat == "coroutine"}
    print("chrome_trace_test: %d zones on %d threads: %d task zones of %d tasks, %d coroutine "
          "zones of %d chains; all nested and paired" %
          (len(zones) // 2, len(stacks), kinds["task"], len(tasks), kinds["coroutine"], len(chains)))


if __name__ == "__main__":
    main()
