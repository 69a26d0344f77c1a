#!/usr/bin/env python3
"""The tables of ab_steps.sh: from the interleaved `bench kernels --tables decode_step` outputs of
several binaries (sections headed `== NAME rep R`), each binary's median graph-replay ms per model
and batch over its reps, and its change against the first binary named; then, for each model and
batch with step breakdowns, each kernel's launches and median us per launch in each binary.

    python3 scripts/device/ab_table.py LOG
"""
import re
import statistics
import sys

SECTION = re.compile(r"^== (\S+) rep (\d+)$")
# "Llama-3.2-1B       1 |      0.979      0.927": model, batch, eager ms, graph ms
STEP = re.compile(r"^(\S+)\s+(\d+)\s+\|\s+([0-9.]+)\s+([0-9.]+)\s*$")
# "  where the graph replay of Llama-3.2-1B's batch-1 step goes (893.9 us; ...": a breakdown's head
BREAKDOWN = re.compile(r"where the graph replay of (\S+)'s batch-(\d+) step goes")
# "  rope_cache_kernel     16      26.5      1.65   3.0%    24": kernel, launches, us, us each, share,
# registers per thread ("-" for a library's kernel; absent from older logs). The times are marginal
# over prefixes of the graph and go negative where a kernel overlaps the next one under PDL: such a
# row is kept, not read as a kernel the binary lacks.
KERNEL = re.compile(r"^  (\S.*?)\s+(\d+)\s+(-?[0-9.]+)\s+(-?[0-9.]+)\s+-?[0-9.]+%(?:\s+(\d+|-))?\s*$")


def parse(lines):
    """{name: {(model, batch): [graph ms, ...]}}, the names in their first order, and the
    breakdowns {(model, batch): {kernel: {name: (launches, [us each, ...])}}} (kernels in their
    first order)."""
    times, names, name = {}, [], None
    kernels, within = {}, None  # within: the (model, batch) whose breakdown lines come now
    for line in lines:
        line = line.rstrip("\n")
        section = SECTION.match(line)
        if section:
            name, within = section.group(1), None
            if name not in times:
                times[name] = {}
                names.append(name)
            continue
        step = STEP.match(line)
        if step and name is not None:
            within = None
            key = (step.group(1), int(step.group(2)))
            times[name].setdefault(key, []).append(float(step.group(4)))
            continue
        head = BREAKDOWN.search(line)
        if head and name is not None:
            within = (head.group(1), int(head.group(2)))
            continue
        kernel = KERNEL.match(line)
        if kernel and within is not None:
            launches, each = int(kernel.group(2)), float(kernel.group(4))
            registers = kernel.group(5) if kernel.group(5) not in (None, "-") else None
            per_name = kernels.setdefault(within, {}).setdefault(kernel.group(1), {})
            per_name.setdefault(name, (launches, registers, []))[2].append(each)
    return times, names, kernels


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


def breakdown_tables(kernels, names):
    """Per (model, batch): each kernel's launches x median us per launch in each binary, and its
    registers per thread where the log gives them."""
    out = []
    width = max([len(k) for per_kernel in kernels.values() for k in per_kernel] + [6])
    for (model, batch), per_kernel in kernels.items():
        out.append(f"\nus per launch in {model}'s batch-{batch} step, median over reps "
                   "(launches x us, r registers)")
        out.append(f"{'kernel':<{width}} |" + "".join(f" {n:>20}" for n in names))
        for kernel, per_name in per_kernel.items():
            row = f"{kernel:<{width}} |"
            for name in names:
                if name in per_name:
                    launches, registers, each = per_name[name]
                    cell = f"{launches} x {statistics.median(each):.2f}" + (f" r{registers}" if registers else "")
                    row += f" {cell:>20}"
                else:
                    row += f" {'-':>20}"
            out.append(row)
    return "\n".join(out) + ("\n" if out else "")


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        times, names, kernels = parse(f)
    sys.stdout.write(table(times, names))
    sys.stdout.write(breakdown_tables(kernels, names))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
