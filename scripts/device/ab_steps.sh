#!/usr/bin/env bash
# Run on the GPU machine over a tree with .device/ carried: the decode-step benchmark (`bench
# kernels --tables decode_step`) of several fullgraph binaries in one call, interleaved REPS times
# so that the machine's drift falls on all of them alike, then one table of graph-replay ms per
# model and batch: each binary's median over its reps and its change against the first binary;
# then each kernel's median us per launch in the step breakdowns (BREAKDOWN: the batches broken
# down, `bench kernels --breakdown-batches`; 1 by default).
#   OUT=$OUT [ATTENTION=split_kv] [REPS=2] [BREAKDOWN=1,8] [TABLE=decode_step_fp8] \
#     bash scripts/device/ab_steps.sh NAME...
# TABLE: the step table to run (decode_step, the BF16 models, by default; decode_step_fp8 for FP8
# linears).
# A NAME is a folder under .device holding a `fullgraph` (variant.sh builds them; copy a base
# binary to .device/base/ by hand), or "." for the staged binary; NAME@VAR=VALUE[,VAR=VALUE...]
# runs that binary with those environment variables (a variant built with knobs read from the
# environment, so that one build serves many settings in one call). The raw outputs land in
# $OUT/ab_steps_$ATTENTION.log, the table in $OUT/ab_steps_$ATTENTION.txt and on stdout.
set -uo pipefail
cd "$(dirname "$0")/../.."
D="$PWD/.device"
OUT="${OUT:-/tmp/out}"
ATTENTION="${ATTENTION:-split_kv}"
REPS="${REPS:-2}"
BREAKDOWN="${BREAKDOWN:-1}"
TABLE="${TABLE:-decode_step}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$D/lib:${LD_LIBRARY_PATH:-}"
(($#)) || { echo "ab_steps.sh: name at least one binary (a folder under .device, or .)" >&2; exit 2; }
for name in "$@"; do
  [ -x "$D/${name%%@*}/fullgraph" ] || { echo "ab_steps.sh: no $D/${name%%@*}/fullgraph" >&2; exit 2; }
done
log="$OUT/ab_steps_$ATTENTION.log"
: >"$log"
for ((rep = 1; rep <= REPS; ++rep)); do
  for name in "$@"; do
    echo "== $name rep $rep" >>"$log"
    settings=()
    [[ "$name" == *@* ]] && IFS=',' read -ra settings <<<"${name#*@}"
    env "${settings[@]+"${settings[@]}"}" "$D/${name%%@*}/fullgraph" bench kernels --json "" --tables "$TABLE" \
      --attention "$ATTENTION" --breakdown-batches "$BREAKDOWN" >>"$log" 2>&1 ||
      echo "ab_steps.sh: $name failed (exit $?)" | tee -a "$log" >&2
  done
done
python3 scripts/device/ab_table.py "$log" | tee "$OUT/ab_steps_$ATTENTION.txt"
