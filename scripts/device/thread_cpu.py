#!/usr/bin/env python3
"""CPU time of a process by thread role, from /proc/PID/task/*/stat (utime + stime).

  thread_cpu.py snapshot PID FILE      record every thread's name and CPU seconds
  thread_cpu.py diff BEFORE AFTER      CPU seconds spent between the two, by thread name, with shares

The server names its threads (core/thread_name.h: "http-io", "engine-loop"); a binary that does
not shows each thread under the process name, and the busiest one is reported apart.
"""
import json
import os
import sys

TICKS = os.sysconf("SC_CLK_TCK")


def snapshot(pid):
    threads = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        threads[tid] = {"name": name, "cpu_s": (int(fields[11]) + int(fields[12])) / TICKS}
    return threads


def diff(before, after):
    spent = []
    for tid, t in after.items():
        used = t["cpu_s"] - before.get(tid, {"cpu_s": 0.0})["cpu_s"]
        spent.append((t["name"], tid, used))
    total = sum(s for _, _, s in spent) or 1e-9
    by_name = {}
    for name, _, used in spent:
        by_name.setdefault(name, [0.0, 0])
        by_name[name][0] += used
        by_name[name][1] += 1
    print(f"process CPU time between snapshots: {total:.2f} s over {len(spent)} threads")
    for name, (used, count) in sorted(by_name.items(), key=lambda kv: -kv[1][0]):
        print(f"  {name:16s} {count:4d} threads {used:8.2f} s  {100 * used / total:5.1f}%")
    busiest = max(spent, key=lambda s: s[2])
    print(f"  busiest thread: {busiest[0]} (tid {busiest[1]}) {busiest[2]:.2f} s  {100 * busiest[2] / total:.1f}%")


if __name__ == "__main__":
    if sys.argv[1] == "snapshot":
        with open(sys.argv[3], "w") as f:
            json.dump(snapshot(sys.argv[2]), f)
    else:
        with open(sys.argv[2]) as a, open(sys.argv[3]) as b:
            diff(json.load(a), json.load(b))
