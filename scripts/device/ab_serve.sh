#!/usr/bin/env bash
# Run on the GPU machine over a tree with .device/ carried: `fullgraph serve` of several binaries on
# the Llama-3.1-8B shape (dummy weights), each loaded by the staged binary's `bench serve` with the
# same prompts at CONCURRENCY streams, and the server's CPU time by thread between the start and
# the end of the load (scripts/device/thread_cpu.py).
#   OUT=$OUT [CONCURRENCY=200] [PROMPTS=800] [INPUT=512] [OUTPUT=128] bash scripts/device/ab_serve.sh NAME...
# A NAME is a folder under .device holding a `fullgraph`, or "." for the staged binary.
set -uo pipefail
cd "$(dirname "$0")/../.."
D="$PWD/.device"
OUT="${OUT:-/tmp/out}"
CONCURRENCY="${CONCURRENCY:-200}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$D/lib:${LD_LIBRARY_PATH:-}"
(($#)) || { echo "ab_serve.sh: name at least one binary (a folder under .device, or .)" >&2; exit 2; }
port=8021
for name in "$@"; do
  tag="${name//[^A-Za-z0-9]/_}"
  port=$((port + 1))
  "$D/$name/fullgraph" serve --shape llama-3.1-8b --device cuda --port "$port" --max-num-seqs 256 \
    --max-num-batched-tokens 2048 --max-model-len 2048 >"$OUT/ab_serve_$tag.log" 2>&1 &
  server=$!
  for _ in $(seq 600); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 1; done
  python3 scripts/device/thread_cpu.py snapshot "$server" "$OUT/threads_before_$tag.json"
  echo "== $name: bench serve, $CONCURRENCY concurrent streams"
  "$D/fullgraph" bench serve --seed 1 --base-url "http://127.0.0.1:$port" --dataset random \
    --input-len "${INPUT:-512}" --output-len "${OUTPUT:-128}" --num-prompts "${PROMPTS:-800}" --request-rate inf \
    --max-concurrency "$CONCURRENCY" --metric-percentiles 50,90,99 --no-progress \
    --json "$OUT/ab_serve_$tag.json" 2>&1 | tee "$OUT/ab_serve_bench_$tag.txt" | tail -32
  python3 scripts/device/thread_cpu.py snapshot "$server" "$OUT/threads_after_$tag.json"
  echo "== $name: server CPU time during the load"
  python3 scripts/device/thread_cpu.py diff "$OUT/threads_before_$tag.json" "$OUT/threads_after_$tag.json" |
    tee "$OUT/ab_serve_cpu_$tag.txt"
  kill -TERM "$server"
  wait "$server"
  echo "$name serve exit $?"
done
