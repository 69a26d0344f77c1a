#!/usr/bin/env bash
# SmolLM2-135M-Instruct (the default model) on the GPU machine. Its GGUF file (98 MB) is larger
# than one device call carries (64 MiB), so it travels in two parts, each named in `carry` by its
# own call; ignored files a call brought stay in the warm machine's tree for the next one:
#   here:   bash scripts/device/smollm2.sh split        (→ .device-model-a/, .device-model-b/)
#   device: call 1 carries .device-model-a, call 2 .device-model-b, call 3 .device (stage.sh) and runs
#           bash scripts/device/smollm2.sh run; a later call: bash scripts/device/smollm2.sh cpu
# `run` joins the parts (checked against setup.sh's sha256 pin), then runs the GPU reference test
# (tests/gpu/test_gguf_smollm2_gpu.cpp) plain and under memcheck, the perplexity of the Genesis
# text at contexts 512 and 2048 on the GPU, and the README's chat question; `cpu` the same
# perplexities on the CPU backend. Everything lands in $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
sha256=$(sed -n 's/^smollm2_gguf_sha256=//p' scripts/setup.sh)
if [ "${1:-}" = split ]; then
  rm -rf .device-model-a .device-model-b && mkdir -p .device-model-a .device-model-b
  half=$(( ($(stat -c %s "$model") + 1) / 2 ))
  head -c "$half" "$model" >.device-model-a/part
  tail -c +"$((half + 1))" "$model" >.device-model-b/part
  du -sh .device-model-a .device-model-b
  exit 0
fi
D="$PWD/.device"
OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT" models
cat .device-model-a/part .device-model-b/part >"$model"
echo "$sha256  $model" | sha256sum --check || exit 1
export LD_LIBRARY_PATH="$D/lib:${LD_LIBRARY_PATH:-}" FULLGRAPH_TESTDATA="$D/testdata" FULLGRAPH_SOURCE_DIR="$PWD"
perplexity() {  # device context extra-flags...
  local device=$1 context=$2
  shift 2
  "$D/fullgraph" perplexity --device "$device" --model "$model" --text tests/fixtures/text/kjv_genesis.txt \
    --context "$context" --json "$OUT/perplexity_${device}_${context}.json" "$@" >"$OUT/perplexity_${device}_${context}.txt" 2>&1
  echo "$device $context: exit $? $(grep -E 'Final estimate' "$OUT/perplexity_${device}_${context}.txt")"
}
if [ "${1:-run}" = cpu ]; then
  # The CPU oracle, both contexts at once on half the cores each; eager, as capturing every
  # graph size costs a forward each on the CPU.
  echo "== perplexity of tests/fixtures/text/kjv_genesis.txt on the CPU"
  threads=$(( $(nproc) / 2 ))
  perplexity cpu 512 --enforce-eager --threads "$threads" &
  perplexity cpu 2048 --enforce-eager --threads "$threads" &
  wait
  exit 0
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
echo "== GPU against transformers"
"$D/fullgraph_gpu_tests" --gtest_filter='GgufSmolLM2Gpu.*' 2>&1 | tee "$OUT/smollm2_gpu_test.txt" | grep -vE "^\[ +(RUN|OK) "
echo "== compute-sanitizer memcheck"
compute-sanitizer --tool memcheck --error-exitcode 7 "$D/fullgraph_gpu_tests" --gtest_filter='GgufSmolLM2Gpu.*' \
  >"$OUT/smollm2_memcheck.txt" 2>&1
echo "memcheck exit $?"; grep -E "ERROR SUMMARY" "$OUT/smollm2_memcheck.txt"
echo "== perplexity of tests/fixtures/text/kjv_genesis.txt on the GPU"
perplexity cuda 512
perplexity cuda 2048
grep -E "tokens|tok/s" "$OUT/perplexity_cuda_2048.txt" | tail -2
echo "== the README's question on the GPU"
"$D/fullgraph" generate --device cuda --chat --model "$model" --user "What is the capital of France?" 2>&1 | tail -5
