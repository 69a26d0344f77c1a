#!/usr/bin/env bash
# Extracts chapters 1-27 of the Book of Genesis (King James Version, public domain) from Debian's
# bible-kjv-text package as plain prose (~23.7k SmolLM2 tokens: a perplexity over more than 20k
# tokens at a cost a CPU run can carry), for `fullgraph perplexity` and its references: one
# paragraph per chapter, chapters separated by a blank line, without chapter headings or verse
# numbers (so that the text holds no digits, whose pre-tokenization differs between llama.cpp and
# transformers' GGUF tokenizer converter).
#
# Usage: scripts/perplexity/make_kjv_genesis.sh [OUT]   (default tests/fixtures/text/kjv_genesis.txt)
# Needs apt-get (downloads bible-kjv and bible-kjv-text 4.38; installs nothing).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$root/tests/fixtures/text/kjv_genesis.txt}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download bible-kjv=4.38 bible-kjv-text=4.38 >/dev/null 2>&1)
for deb in "$work"/*.deb; do dpkg -x "$deb" "$work/root"; done
# `bible -l1000` prints "Genesis N" headings and one "  V text" line per verse.
(cd "$work/root/usr/lib" && ../bin/bible -p . -l1000 "Genesis1:1-Genesis27:46") |
  awk '
    /^Genesis [0-9]+$/ { if (para != "") { print para; print ""; } para = ""; next }
    /^ *[0-9]+ / { sub(/^ *[0-9]+ /, ""); para = (para == "" ? $0 : para " " $0); next }
    END { if (para != "") print para }
  ' >"$out"
if grep -q '[0-9]' "$out"; then echo "make_kjv_genesis: digits left in $out" >&2; exit 1; fi
echo "wrote $out: $(wc -c <"$out") bytes, $(wc -w <"$out") words"
