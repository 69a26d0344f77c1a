#!/usr/bin/env python3
"""The table of ab_steps.sh: from the interleaved `bench kernels --tables decode_step` outputs of
several binaries (sections headed `== NAME rep R`), each binary's median graph-replay ms per model
and batch over its reps, and its change against the first binary named.

    python3 scripts/device/ab_table.py LOG
"""
import re
import statistics
import sys

SECTION = re.compile(r"^== (\S+) rep (\d+)$")
# "Llama-3.2-1B       1 |      0.979      0.927": model, batch, eager ms, graph ms
STEP = re.compile(r"^(\S+)\s+(\d+)\s+\|\s+([0-9.]+)\s+([0-9.]+)\s*$")


def parse(lines):
    """{name: {(model, batch): [graph ms, ...]}} and the names in their first order."""
    times, names, name = {}, [], None
    for line in lines:
        line = line.rstrip("\n")
        section = SECTION.match(line)
        if section:
            name = section.group(1)
            if name not in times:
                times[name] = {}
                names.append(name)
            continue
        step = STEP.match(line)
        if step and name is not None:
            key = (step.group(1), int(step.group(2)))
            times[name].setdefault(key, []).append(float(step.group(4)))
    return times, names


def table(times, names):
    if not names:
        return "no `== NAME rep R` sections found\n"
    base = names[0]
    keys = []
    for name in names:
        for key in times[name]:
            if key not in keys:
                keys.append(key)
    header = f"{'model':<14} {'batch':>5} |" + "".join(f" {n:>16}" for n in names)
    out = ["graph ms, median over reps (change against " + base + ")", header]
    for key in keys:
        row = f"{key[0]:<14} {key[1]:>5} |"
        reference = times[base].get(key)
        for name in names:
            got = times[name].get(key)
            if not got:
                row += f" {'-':>16}"
                continue
            ms = statistics.median(got)
            if name == base or not reference:
                row += f" {ms:>16.3f}"
            else:
                change = 100.0 * (ms / statistics.median(reference) - 1.0)
                row += f" {ms:>8.3f} {change:>+6.1f}%"
        out.append(row)
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        times, names = parse(f)
    sys.stdout.write(table(times, names))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
