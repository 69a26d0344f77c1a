#!/usr/bin/env bash
# Run here after stage.sh: builds .device/timeline/fullgraph, a variant whose streamed kernels
# record their blocks' timeline (kStreamedTimeline = true in streamed_linear.h), for
#   .device/timeline/fullgraph bench kernels --tables streamed_timeline --json "$OUT/timeline.json"
# on the device. The engine's build has the recording compiled out: its checks cost the decode step
# about 1% (bench/RESULTS.md, 2026-12-01 session 9).
set -euo pipefail
cd "$(dirname "$0")/../.."
header=src/backend/cuda/streamed_linear.h
grep -q '^inline constexpr bool kStreamedTimeline = false;$' "$header" ||
  { echo "timeline_variant.sh: $header does not say kStreamedTimeline = false" >&2; exit 1; }
git diff --quiet -- "$header" || { echo "timeline_variant.sh: $header has uncommitted changes" >&2; exit 1; }
patch="$(mktemp --suffix=.patch)"
trap 'rm -f "$patch"' EXIT
sed -i 's/^inline constexpr bool kStreamedTimeline = false;$/inline constexpr bool kStreamedTimeline = true;/' "$header"
git diff -- "$header" >"$patch"
git checkout -- "$header"
bash scripts/device/variant.sh timeline "$patch"
