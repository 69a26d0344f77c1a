#!/usr/bin/env bash
# Sets up a fresh machine, checks that includes point down the layers, builds with warnings as
# errors, runs every test that needs no GPU (ctest label gpu is excluded) and the fuzzers for 60 s
# each, then prints one summary line.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
python3 scripts/check_layers.py
bash scripts/build.sh -DFULLGRAPH_WERROR=ON
ctest --test-dir build --output-on-failure -LE gpu -j 2 | tee build/ctest.log
bash scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
passed=$(sed -n 's/.*tests passed, 0 tests failed out of \([0-9]*\).*/\1/p' build/ctest.log)
echo "summary: ${passed:-0} passed, 0 failed"
