#!/usr/bin/env bash
# Configures and builds fullgraph into ./build (CUDA backend too where nvcc is found).
# Extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DPython3_EXECUTABLE="$(command -v python3)" "$@" >/dev/null
cmake --build build -j "$(nproc)"
