#!/usr/bin/env bash
# Sets up a fresh machine, builds with warnings as errors, runs every test that needs no GPU
# (ctest label gpu is excluded) and the fuzzers for 60 s each.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh -DFULLGRAPH_WERROR=ON
ctest --test-dir build --output-on-failure -LE gpu -j 2
bash scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
