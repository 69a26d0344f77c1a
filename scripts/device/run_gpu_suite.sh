#!/usr/bin/env bash
# Run on the GPU machine over a tree with .device/ carried (see stage.sh). Runs the GPU tests,
# compute-sanitizer memcheck on them, and the benchmarks; everything lands in $OUT.
#   bash scripts/device/run_gpu_suite.sh [tests|sanitize|bench|latency|kernels|all]...
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
  echo "== compute-sanitizer memcheck"
  compute-sanitizer --tool memcheck --error-exitcode 7 "$D/fullgraph_gpu_tests" --gtest_brief=1 \
    --gtest_filter="${SANITIZE_FILTER:-*}" >"$OUT/memcheck.log" 2>&1
  echo "memcheck exit $?"
  grep -E "ERROR SUMMARY|FAILED|tests ran" "$OUT/memcheck.log" | tail -10
fi
if has kernels; then
  echo "== attention and sampling benchmarks, with PyTorch's flash attention as the peer"
  FULLGRAPH_BENCH_JSON="$OUT/bench_attention.json" "$D/fullgraph_gpu_tests" --gtest_also_run_disabled_tests \
    --gtest_filter='AttentionFlashBench.*' 2>&1 | tee "$OUT/bench_attention.txt" | grep -vE "^\[|^Running|^Note" | tail -40
  python3 bench/attention_peer.py --json "$OUT/attention_peer.json" 2>&1 | tee "$OUT/attention_peer.txt" | tail -30
  "$D/fullgraph_gpu_tests" --gtest_also_run_disabled_tests --gtest_filter='CudaSampling.DISABLED_Benchmark' 2>&1 |
    tee "$OUT/bench_sampling.txt" | grep -vE "^\[|^Running|^Note" | tail -20
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
