#!/usr/bin/env bash
# Run on the GPU machine over a tree with .device/ carried (stage.sh, plus the fixture tokenizers
# as .device/tokenizers.tar.xz): the cost of the token mask in a decode step and the constrained
# generations on CUDA; everything lands in $OUT.
#   bash scripts/device/structured_outputs.sh [latency|generations]...
# latency: `bench latency` rows of decode steps with every request constrained by the large schema
# (bench/grammar/large_schema.json) beside the same steps unconstrained, for 1 and 4 fill threads.
# generations: tests/python/test_structured_outputs.py on CUDA, its outputs written to
# $OUT/structured.jsonl for validation where jsonschema is installed (STRUCTURED_RESULTS_IN).
set -uo pipefail
cd "$(dirname "$0")/../.."
D="$PWD/.device"
OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$D/lib:${LD_LIBRARY_PATH:-}" FULLGRAPH_TESTDATA="$D/testdata" PYTHONUNBUFFERED=1
[ -d "$D/testdata/tokenizers" ] || tar xJf "$D/tokenizers.tar.xz" -C "$D/testdata"
what=("${@:-latency generations}")
has() { for w in ${what[@]}; do [ "$w" = "$1" ] && return 0; done; return 1; }
if has latency; then
  for threads in 1 4; do
    "$D/fullgraph" bench latency --device cuda --shape llama-3.2-1b --context 512 --batch-sizes 1,64 --no-mixed \
      --steps 21 --json-schema bench/grammar/large_schema.json --tokenizer "$D/testdata/tokenizers/llama3_1" \
      --grammar-threads "$threads" 2>&1 | tee "$OUT/latency_json_threads$threads.txt" | grep -v capturing
  done
fi
if has generations; then
  FULLGRAPH_BINARY="$D/fullgraph" FULLGRAPH_DEVICE=cuda STRUCTURED_RESULTS_OUT="$OUT/structured.jsonl" \
    python3 tests/python/test_structured_outputs.py 2>&1 | tail -15
fi
