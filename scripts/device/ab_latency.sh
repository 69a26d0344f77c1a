#!/usr/bin/env bash
# Run on the GPU machine over a tree with .device/ carried: `bench latency` (decode steps through
# the ModelRunner: staging, the one copy, the graph replay, the read-back) of several fullgraph
# binaries on the named shapes, interleaved REPS times so that the machine's drift falls on all of
# them alike, then one table of graph ms per shape and batch with each binary's change against the
# first one named.
#   OUT=$OUT [REPS=2] [SHAPES="llama-3.2-1b ..."] [BATCHES=1,8,16,64] bash scripts/device/ab_latency.sh NAME...
# A NAME is a folder under .device holding a `fullgraph`, or "." for the staged binary. --steps is
# odd (21) so that every median is one sample, whatever the binary's median convention.
set -uo pipefail
cd "$(dirname "$0")/../.."
D="$PWD/.device"
OUT="${OUT:-/tmp/out}"
REPS="${REPS:-2}"
SHAPES="${SHAPES:-llama-3.2-1b llama-3.1-8b qwen3-0.6b qwen2.5-0.5b}"
BATCHES="${BATCHES:-1,8,16,64}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$D/lib:${LD_LIBRARY_PATH:-}"
(($#)) || { echo "ab_latency.sh: name at least one binary (a folder under .device, or .)" >&2; exit 2; }
for name in "$@"; do
  [ -x "$D/$name/fullgraph" ] || { echo "ab_latency.sh: no $D/$name/fullgraph" >&2; exit 2; }
done
log="$OUT/ab_latency.log"
: >"$log"
for ((rep = 1; rep <= REPS; ++rep)); do
  for shape in $SHAPES; do
    for name in "$@"; do
      echo "== $name $shape rep $rep" >>"$log"
      "$D/$name/fullgraph" bench latency --device cuda --shape "$shape" --context 512 --batch-sizes "$BATCHES" \
        --no-mixed --steps 21 >>"$log" 2>/dev/null || echo "ab_latency.sh: $name $shape failed (exit $?)" | tee -a "$log" >&2
    done
  done
done
python3 - "$log" "$@" <<'PY' | tee "$OUT/ab_latency.txt"
import re, statistics, sys
log, names = sys.argv[1], sys.argv[2:]
times, key = {}, None
for line in open(log):
    m = re.match(r"^== (\S+) (\S+) rep \d+$", line)
    if m:
        key = (m.group(1), m.group(2))
        continue
    m = re.match(r"^decode\s+(\d+)\s+\d+\s+([0-9.]+)\s+([0-9.]+)", line)
    if m and key:
        times.setdefault((key[1], int(m.group(1))), {}).setdefault(key[0], []).append(float(m.group(3)))
print("| shape | batch | " + " | ".join(f"{n} graph ms" for n in names) + " | " +
      " | ".join(f"{n} vs {names[0]}" for n in names[1:]) + " |")
print("| --- | --- | " + " | ".join("---" for _ in names) + " | " + " | ".join("---" for _ in names[1:]) + " |")
for (shape, batch), by_name in sorted(times.items()):
    cells = [" / ".join(f"{t:.3f}" for t in by_name.get(n, [])) for n in names]
    base = statistics.median(by_name[names[0]]) if names[0] in by_name else None
    changes = [f"{100 * (statistics.median(by_name[n]) / base - 1):+.1f}%" if base and n in by_name else "-"
               for n in names[1:]]
    print(f"| {shape} | {batch} | " + " | ".join(cells) + " | " + " | ".join(changes) + " |")
PY
