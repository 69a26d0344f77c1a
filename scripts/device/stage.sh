#!/usr/bin/env bash
# Run here (no GPU needed): builds the CUDA targets and gathers what a GPU run needs into
# .device/ (git-ignored; name it in the device tool's `carry`): the binaries (the probes of
# bench/probes/ too), the shared libraries the GPU machine lacks, the model fixtures and the peer
# scripts' inputs.
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${BUILD_DIR:-build-cuda}"
cmake -S . -B "$build" -G Ninja -DFULLGRAPH_TESTS=ON >/dev/null
cmake --build "$build" -j 2 --target fullgraph fullgraph_gpu_tests probe_phase_boundaries
rm -rf .device && mkdir -p .device/lib .device/testdata
cp "$build/fullgraph" "$build/fullgraph_gpu_tests" "$build"/probe_* .device/
for lib in $(ldd "$build/fullgraph" "$build/fullgraph_gpu_tests" | awk '/=> \// {print $3}' | sort -u); do
  case "$lib" in
    */libfmt.so*|*/libspdlog.so*|*/libpcre2-8.so*|*/libutf8proc.so*|*/libcpp-httplib.so*|*/libxxhash.so*|*/libbrotli*|*/libssl.so*|*/libcrypto.so*) cp -L "$lib" .device/lib/ ;;
  esac
done
testdata="${FULLGRAPH_TESTDATA:-../shared/testdata}"
cp -r "$testdata/models" "$testdata/e2e" .device/testdata/
du -sh .device
