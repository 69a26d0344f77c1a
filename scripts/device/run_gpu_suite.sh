#!/usr/bin/env bash
# Run on the GPU machine over a tree with .device/ carried (see stage.sh). Runs the GPU tests,
# compute-sanitizer memcheck on them, and the benchmarks; everything lands in $OUT.
#   bash scripts/device/run_gpu_suite.sh [tests|sanitize|bench|latency|kernels|probes|throughput|serve|all]...
# sanitize runs memcheck over the whole GPU test binary in SANITIZE_SHARDS parallel shards (gtest
# sharding: every test lands in exactly one shard). probes runs each standalone probe staged from
# bench/probes/ (.device/probe_NAME; each checks its own result).
set -uo pipefail
cd "$(dirname "$0")/../.."
D="$PWD/.device"
OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$D/lib:${LD_LIBRARY_PATH:-}"
export FULLGRAPH_TESTDATA="$D/testdata"
export PYTHONUNBUFFERED=1
what=("${@:-all}")
has() { for w in "${what[@]}"; do [ "$w" = "$1" ] || [ "$w" = all ] && return 0; done; return 1; }

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
if has tests; then
  echo "== gpu tests"
  "$D/fullgraph_gpu_tests" --gtest_brief=1 --gtest_output="xml:$OUT/gpu_tests.xml" >"$OUT/gpu_tests.log" 2>&1
  echo "gpu tests exit $?"
  grep -E "FAILED|PASSED|SKIPPED|tests ran" "$OUT/gpu_tests.log" | tail -40
fi
if has sanitize; then
  echo "== compute-sanitizer memcheck, ${SANITIZE_SHARDS:-4} shards"
  shards="${SANITIZE_SHARDS:-4}"
  for ((i = 0; i < shards; ++i)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i compute-sanitizer --tool memcheck --error-exitcode 7 \
      "$D/fullgraph_gpu_tests" --gtest_brief=1 --gtest_filter="${SANITIZE_FILTER:-*}" >"$OUT/memcheck_$i.log" 2>&1 &
  done
  status=0
  for job in $(jobs -p); do wait "$job" || status=$?; done
  echo "memcheck exit $status"
  grep -hE "ERROR SUMMARY|FAILED|tests ran|PASSED" "$OUT"/memcheck_*.log | tail -20
fi
if has kernels; then
  echo "== attention and sampling benchmarks, with PyTorch's flash attention as the peer"
  "$D/fullgraph" bench attention --json "$OUT/bench_attention.json" 2>&1 | tee "$OUT/bench_attention.txt" | tail -40
  python3 bench/attention_peer.py --json "$OUT/attention_peer.json" 2>&1 | tee "$OUT/attention_peer.txt" | tail -30
  "$D/fullgraph" bench sampling 2>&1 | tee "$OUT/bench_sampling.txt" | tail -30
fi
if has probes; then
  for probe in "$D"/probe_*; do
    [ -x "$probe" ] || continue
    name=$(basename "$probe")
    echo "== $name"
    "$probe" 2>&1 | tee "$OUT/$name.txt"
    echo "$name exit ${PIPESTATUS[0]}"
  done
fi
if has bench || has latency; then
  echo "== benchmarks"
  has bench && "$D/fullgraph" bench kernels --json "$OUT/bench_kernels.json" 2>&1 | tee "$OUT/bench_kernels.txt" | tail -40
  for shape in llama-3.2-1b llama-3.1-8b; do
    "$D/fullgraph" bench latency --device cuda --shape "$shape" --batch-sizes 1,8,64,256 --context 512 \
      --attention "${LATENCY_ATTENTION:-split_kv}" \
      --output-json "$OUT/latency_${shape}_${LATENCY_ATTENTION:-split_kv}.json" 2>&1 | grep -v "capturing graphs" | tee "$OUT/latency_${shape}_${LATENCY_ATTENTION:-split_kv}.txt"
  done
fi
if has throughput; then
  # 1000 random prompts (1024 tokens in, 128 out) on the Llama-3.1-8B shape, dummy weights.
  echo "== offline throughput, llama-3.1-8b shape"
  python3 - "$OUT/prompts_1000.jsonl" <<'PY'
import json, random, sys
rng = random.Random(0)
with open(sys.argv[1], "w") as f:
    for _ in range(1000):
        f.write(json.dumps({"prompt_ids": [rng.randrange(128256) for _ in range(1024)], "max_tokens": 128, "temperature": 0,
                            "ignore_eos": True}) + "\n")
PY
  "$D/fullgraph" generate --prompts "$OUT/prompts_1000.jsonl" --shape llama-3.1-8b --device cuda \
    --max-num-seqs "${THROUGHPUT_SEQS:-256}" --max-num-batched-tokens "${THROUGHPUT_TOKENS:-2048}" --max-model-len 2048 \
    --no-progress --output "$OUT/throughput_results.jsonl" 2>&1 | grep -v "capturing graphs" | tee "$OUT/throughput.txt"
fi
if has serve; then
  # bench serve against serve, Llama-3.1-8B shape, dummy weights, a few request rates.
  echo "== serve + bench serve, llama-3.1-8b shape"
  "$D/fullgraph" serve --shape llama-3.1-8b --device cuda --port 8011 --max-num-seqs 256 \
    --max-num-batched-tokens 2048 --max-model-len 2048 >"$OUT/serve.log" 2>&1 &
  server=$!
  for _ in $(seq 600); do curl -sf http://127.0.0.1:8011/health >/dev/null && break; sleep 1; done
  seed=0
  for rate in ${SERVE_RATES:-4 16 inf}; do
    # A new seed per run: the same prompts again would be served from the prefix cache.
    seed=$((seed + 1))
    "$D/fullgraph" bench serve --seed "$seed" --base-url http://127.0.0.1:8011 --dataset random --input-len 1024 --output-len 128 \
      --num-prompts "${SERVE_PROMPTS:-200}" --request-rate "$rate" --no-progress --json "$OUT/bench_serve_$rate.json" \
      2>&1 | tee "$OUT/bench_serve_$rate.txt" | tail -40
  done
  curl -s http://127.0.0.1:8011/metrics >"$OUT/serve_metrics.txt"
  kill -TERM "$server"; wait "$server"; echo "serve exit $?"
fi
