#!/usr/bin/env bash
# Run on the GPU machine over a tree with .device/ carried (stage.sh): the FP8 tests and
# benchmarks; everything lands in $OUT.
#   bash scripts/device/fp8.sh [tests|sanitize|gemm|steps|bench|latency|70b|throughput|serve70b]...
# tests: the whole GPU test binary; sanitize: memcheck over the FP8 tests; gemm: the FP8 GEMM
# table (engine, CUTLASS, cuBLASLt + pass, BF16 at 32-8192 rows), its test and memcheck; steps: the
# decode step tables, BF16 and FP8, with the batch-1 breakdown; bench: the FP8 tables of `bench
# kernels` beside the BF16 decode step; latency: bench latency of the 1B and 8B shapes, BF16 and
# FP8; 70b: the llama-3.1-70b shape in FP8 (bench latency at batch 1 and 8); throughput: 1000
# prompts of 1024 in / 128 out on the 8B shape, BF16, FP8, and FP8 with an FP8 KV cache; serve70b:
# the 70B shape in FP8 behind `serve`, `bench serve` at 4 requests/s. KV_DTYPE=fp8 gives the 70B
# steps an FP8 KV cache; THROUGHPUT_RUNS="weights:kv ..." picks the throughput runs and their order.
set -uo pipefail
cd "$(dirname "$0")/../.."
D="$PWD/.device"
OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$D/lib:${LD_LIBRARY_PATH:-}"
export FULLGRAPH_TESTDATA="$D/testdata"
export FULLGRAPH_SOURCE_DIR="$PWD"
# memcheck is ~100x slower: the kernels' own tests, the models, and the FP8-cache attention's
# shorter batches.
SANITIZE_TESTS='Fp8Kernels.*:Fp8Gemm.*:*Fp8CheckpointGpu*:*QuantizedAtLoadGpu*:*Fp8KvCacheGpu*:AttentionFp8Kv.Flash*:AttentionFp8Kv.Reference*'
for what in "$@"; do
  case "$what" in
    tests)
      echo "== gpu tests"
      "$D/fullgraph_gpu_tests" --gtest_brief=1 --gtest_output="xml:$OUT/gpu_tests.xml" >"$OUT/gpu_tests.log" 2>&1
      echo "gpu tests exit $?"
      grep -E "FAILED|PASSED|SKIPPED|tests ran" "$OUT/gpu_tests.log" | tail -30
      grep -E "^FP8|^--quantization fp8" "$OUT/gpu_tests.log" | tail -60 ;;
    sanitize)
      echo "== compute-sanitizer memcheck over the FP8 tests"
      compute-sanitizer --tool memcheck --error-exitcode 7 "$D/fullgraph_gpu_tests" --gtest_brief=1 \
        --gtest_filter="$SANITIZE_TESTS" >"$OUT/memcheck_fp8.log" 2>&1
      echo "memcheck exit $?"
      grep -hE "ERROR SUMMARY|FAILED|tests ran|PASSED" "$OUT/memcheck_fp8.log" | tail -10 ;;
    gemm)
      echo "== bench kernels --tables fp8_gemm_rows; Fp8Gemm.* and its memcheck"
      "$D/fullgraph" bench kernels --tables fp8_gemm_rows --json "$OUT/fp8_gemm_rows.json" 2>&1 |
        tee "$OUT/fp8_gemm_rows.txt" | tail -34
      "$D/fullgraph_gpu_tests" --gtest_brief=1 --gtest_filter='Fp8Gemm.*' >"$OUT/fp8_gemm_test.log" 2>&1
      echo "Fp8Gemm exit $?"; grep -E "Failure|FAILED|PASSED" -A2 "$OUT/fp8_gemm_test.log" | head -16
      compute-sanitizer --tool memcheck --error-exitcode 7 "$D/fullgraph_gpu_tests" --gtest_brief=1 \
        --gtest_filter='Fp8Gemm.*' >"$OUT/memcheck_fp8_gemm.log" 2>&1
      echo "memcheck exit $?"; grep -h "ERROR SUMMARY" "$OUT/memcheck_fp8_gemm.log" ;;
    steps)
      echo "== bench kernels: the decode step, BF16 and FP8"
      "$D/fullgraph" bench kernels --tables decode_step,decode_step_fp8 --breakdown-batches 1 \
        --json "$OUT/bench_steps.json" 2>&1 | tee "$OUT/bench_steps.txt" | grep -v "^  " ;;
    bench)
      echo "== bench kernels: FP8 tables and the decode step, BF16 and FP8"
      "$D/fullgraph" bench kernels --tables fp8_linear,fp8_gemm_rows,decode_step,decode_step_fp8 \
        --breakdown-batches 1 --json "$OUT/bench_fp8.json" 2>&1 | tee "$OUT/bench_fp8.txt" | grep -v "^  " ;;
    latency)
      for shape in llama-3.2-1b llama-3.1-8b; do
        for q in "" fp8; do
          echo "== bench latency $shape ${q:-bf16}"
          "$D/fullgraph" bench latency --device cuda --shape "$shape" ${q:+--quantization $q} --batch-sizes 1,8,64 \
            --context 512 --attention split_kv --output-json "$OUT/latency_${shape}_${q:-bf16}.json" 2>&1 |
            grep -v "capturing graphs" | tee "$OUT/latency_${shape}_${q:-bf16}.txt" | tail -12
        done
      done ;;
    70b)
      echo "== llama-3.1-70b, FP8 linears quantized at load, KV cache ${KV_DTYPE:-auto}"
      "$D/fullgraph" bench latency --device cuda --shape llama-3.1-70b --quantization fp8 --batch-sizes 1,8 \
        ${KV_DTYPE:+--kv-cache-dtype $KV_DTYPE} \
        --context 512 --prefill-chunk 256 --attention split_kv --output-json "$OUT/latency_70b_fp8.json" 2>&1 |
        grep -v "capturing graphs" | tee "$OUT/latency_70b_fp8.txt" | tail -15
      nvidia-smi --query-gpu=memory.used,memory.total --format=csv ;;
    throughput)
      python3 - "$OUT/prompts_1000.jsonl" <<'PY'
import json, random, sys
rng = random.Random(0)
with open(sys.argv[1], "w") as f:
    for _ in range(1000):
        f.write(json.dumps({"prompt_ids": [rng.randrange(128256) for _ in range(1024)], "max_tokens": 128,
                            "temperature": 0, "ignore_eos": True}) + "\n")
PY
      # weights:KV cache. Decode attention reads 1000 x 128 steps of ~1,088 tokens of cache, 18.3 TB
      # in BF16 on this shape: an FP8 cache halves the one cost FP8 weights leave untouched.
      for run in ${THROUGHPUT_RUNS:-bf16:auto fp8:auto fp8:fp8}; do
        q="${run%%:*}" kv="${run##*:}"
        name="${q}_kv_${kv}"
        echo "== offline throughput, llama-3.1-8b shape, weights $q, KV cache $kv"
        "$D/fullgraph" generate --prompts "$OUT/prompts_1000.jsonl" --shape llama-3.1-8b --device cuda \
          $([ "$q" = fp8 ] && echo --quantization fp8) --kv-cache-dtype "$kv" \
          --max-num-seqs 256 --max-num-batched-tokens 2048 --max-model-len 2048 --no-progress \
          --output "$OUT/throughput_$name.jsonl" 2>&1 | grep -v "capturing graphs" | tee "$OUT/throughput_$name.txt" | tail -6
      done ;;
    serve70b)
      echo "== serve llama-3.1-70b FP8 (KV cache ${KV_DTYPE:-auto}) + bench serve at 4 requests/s"
      "$D/fullgraph" serve --shape llama-3.1-70b --quantization fp8 --device cuda --port 8011 --max-num-seqs 64 \
        ${KV_DTYPE:+--kv-cache-dtype $KV_DTYPE} \
        --max-num-batched-tokens 2048 --max-model-len 2048 --cuda-graph-sizes 1,2,4,8,16,32,64,128,256,512 \
        >"$OUT/serve70b.log" 2>&1 &
      server=$!
      for _ in $(seq 400); do curl -sf http://127.0.0.1:8011/health >/dev/null && break; sleep 1; done
      "$D/fullgraph" bench serve --seed 1 --base-url http://127.0.0.1:8011 --dataset random --input-len 1024 \
        --output-len 128 --num-prompts "${SERVE_PROMPTS:-100}" --request-rate 4 --no-progress \
        --json "$OUT/bench_serve_70b_4.json" 2>&1 | tee "$OUT/bench_serve_70b_4.txt" | tail -30
      kill -TERM "$server"; wait "$server"; echo "serve exit $?"
      grep -E "quantization|KV|error" "$OUT/serve70b.log" | head ;;
    *) echo "unknown step $what"; exit 2 ;;
  esac
done
