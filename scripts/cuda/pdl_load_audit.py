#!/usr/bin/env python3
"""Lists the global loads a PDL kernel may issue before its griddepcontrol.wait.

A kernel launched with programmatic dependent launch (core/cuda/pdl.cuh) runs while the kernel
before it is still writing. Loads that can run ahead of the wait (ACQBULK in SASS) may read only
data no earlier kernel of the step writes: weights, constant tables, the step's metadata. ptxas
moves non-coherent loads (LDG.*.CONSTANT: ld.global.nc, which `const T* __restrict__` and __ldg
produce) freely, across the wait too, so the source order is no guarantee; this reads the SASS.

A load is listed when some path from the kernel's entry reaches it without passing a wait (the
control flow graph of the SASS: labels, branches, exits). Loads of threads that never wait (a
warp-specialized kernel's consumers, ordered by barriers instead) are listed too: judge them by
the source line printed beside each.

Usage: pdl_load_audit.py NVDISASM CUBIN...
  A cubin with line info, from the build's flags:
    nvcc -Isrc -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
         -std=c++20 -lineinfo -cubin -o k.cubin src/backend/cuda/fp8_small_n_linear.cu
  nvdisasm: the CUDA toolkit's, or `pip download nvidia-cuda-nvdisasm` (nvidia/cu13/bin/ in the wheel).
"""
import re
import subprocess
import sys

FUNC = re.compile(r"^\s*\.text\.(\S+):")
LABEL = re.compile(r"^(\.L_x_\d+):")
INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
TARGET = re.compile(r"`\((\.L_x_\d+)\)")
LINE = re.compile(r'//## File "([^"]+)", line (\d+)')
LOAD = re.compile(r"^(@!?U?P\w+\s+)?(LDG|LDGSTS|LD|UTMALDG)\b")


def parse(text):
    """{function: [(label or None, address, instruction, source line)]}"""
    functions, current, where, label = {}, None, None, None
    for raw in text.splitlines():
        m = FUNC.match(raw)
        if m:
            current, label = m.group(1), None
            functions[current] = []
            continue
        if current is None:
            continue
        m = LINE.search(raw)
        if m:
            where = f"{m.group(1).split('/src/')[-1]}:{m.group(2)}"
            continue
        m = LABEL.match(raw.strip())
        if m:
            functions[current].append((m.group(1), None, None, None))
            continue
        m = INSN.search(raw)
        if m:
            functions[current].append((None, int(m.group(1), 16), m.group(2).strip(), where))
    return functions


def unwaited_loads(entries):
    """The loads some path from the entry reaches with no ACQBULK before them."""
    # Basic blocks: a label starts one; a branch or exit ends one.
    blocks, labels = [[]], {}
    for label, address, insn, where in entries:
        if label is not None:
            if blocks[-1]:
                blocks.append([])
            labels[label] = len(blocks) - 1
            continue
        blocks[-1].append((address, insn, where))
        if re.search(r"\b(BRA|EXIT|RET|BRX|JMP)\b", insn):
            blocks.append([])
    successors = []
    for i, block in enumerate(blocks):
        out = []
        last = block[-1][1] if block else ""
        unconditional = not last.startswith("@")
        m = TARGET.search(last)
        if m and m.group(1) in labels:
            out.append(labels[m.group(1)])
        if not (unconditional and re.search(r"\b(BRA|EXIT|RET|BRX|JMP)\b", last)) and i + 1 < len(blocks):
            out.append(i + 1)
        successors.append(out)
    # May-reach-unwaited: a block is entered unwaited if any predecessor leaves it unwaited.
    unwaited_in = [False] * len(blocks)
    unwaited_in[0] = True
    changed = True
    while changed:
        changed = False
        for i, block in enumerate(blocks):
            if not unwaited_in[i]:
                continue
            leaves_unwaited = not any("ACQBULK" in insn for _, insn, _ in block)
            if leaves_unwaited:
                for s in successors[i]:
                    if not unwaited_in[s]:
                        unwaited_in[s] = changed = True
    found = []
    for i, block in enumerate(blocks):
        if not unwaited_in[i]:
            continue
        for address, insn, where in block:
            if "ACQBULK" in insn:
                break
            if LOAD.search(insn):
                found.append((address, insn, where))
    return found


def main():
    nvdisasm, cubins = sys.argv[1], sys.argv[2:]
    for cubin in cubins:
        text = subprocess.run([nvdisasm, "-c", "-g", cubin], check=True, capture_output=True, text=True).stdout
        for name, entries in parse(text).items():
            if not any(insn and "ACQBULK" in insn for _, _, insn, _ in entries):
                continue
            loads = unwaited_loads(entries)
            print(f"{name} ({cubin}): {len(loads)} loads may run before the wait")
            for address, insn, where in loads:
                print(f"  {address:#06x}  {insn:60s} {where}")


if __name__ == "__main__":
    main()
