#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) into ./build-fuzz and runs each one for
# SECONDS (default 60) on its seed corpus, two at a time. Any finding fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DFULLGRAPH_FUZZ=ON -DFULLGRAPH_TESTS=OFF >/dev/null
cmake --build build-fuzz -j "$(nproc)"

export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export FULLGRAPH_TESTDATA="${FULLGRAPH_TESTDATA:-$PWD/../shared/testdata}"
mkdir -p build-fuzz/findings
pids=()
names=()
for src in fuzz/fuzz_*.cpp; do
  name=$(basename "$src" .cpp)
  corpus="fuzz/corpus/${name#fuzz_}"
  work="build-fuzz/corpus/$name"
  mkdir -p "$work"
  [ -d "$corpus" ] && cp -r "$corpus"/. "$work"/ 2>/dev/null || true
  dict=()
  [ -f "fuzz/dict/${name#fuzz_}.dict" ] && dict=(-dict="fuzz/dict/${name#fuzz_}.dict")
  echo "fuzz: $name for ${seconds}s"
  ./build-fuzz/"$name" "${dict[@]}" -max_total_time="$seconds" -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix=build-fuzz/findings/"$name"- "$work" >build-fuzz/"$name".log 2>&1 &
  pids+=($!)
  names+=("$name")
  if [ "${#pids[@]}" -ge 2 ]; then
    wait "${pids[0]}" || { echo "fuzz: ${names[0]} found a problem"; tail -40 build-fuzz/"${names[0]}".log; exit 1; }
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { echo "fuzz: ${names[$i]} found a problem"; tail -40 build-fuzz/"${names[$i]}".log; exit 1; }
done
grep -H "stat::number_of_executed_units" build-fuzz/fuzz_*.log | sed 's|build-fuzz/||'
echo "fuzz: no findings"
