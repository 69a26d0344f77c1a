#!/usr/bin/env bash
# Run here after stage.sh: builds a variant of `fullgraph` with a patch applied to the working
# tree and puts it (and its GPU test binary) in .device/NAME/, beside the staged binaries, so that
# one device call can test and measure both (e.g. `bench kernels --tables decode_step` for each).
#   bash scripts/device/variant.sh NAME PATCH     (PATCH: a `git diff` of the change to try)
# The patch is reverted and the build directory rebuilt before the script returns, also when the
# variant fails to build. Only the files the patch touches recompile.
set -euo pipefail
cd "$(dirname "$0")/../.."
name="$1"
patch="$(realpath "$2")"
build="${BUILD_DIR:-build-cuda}"
[ -f .device/fullgraph ] || { echo "variant.sh: run stage.sh first (.device/fullgraph is missing)" >&2; exit 1; }
git apply --check "$patch"
git apply "$patch"
restore() {
  git apply -R "$patch"
  cmake --build "$build" -j 2 --target fullgraph fullgraph_gpu_tests >/dev/null
}
trap restore EXIT
cmake --build "$build" -j 2 --target fullgraph fullgraph_gpu_tests
mkdir -p ".device/$name"
cp "$build/fullgraph" "$build/fullgraph_gpu_tests" ".device/$name/"
echo "variant.sh: .device/$name/ built with $(basename "$patch")"
