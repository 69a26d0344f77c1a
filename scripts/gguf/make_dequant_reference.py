#!/usr/bin/env python3
"""Writes the dequantization references of tests/test_gguf_dequant.cpp from the `gguf` Python package.

For each ggml type fullgraph dequantizes, a few blocks of raw bytes and gguf-py's fp32 expansion
of them, made two ways where gguf-py can quantize the type (random floats quantized by gguf-py,
which is what real files hold) and one way for every type (random bytes with a finite f16 scale in
each block, which reaches every bit pattern of the quantized values). The F16 and BF16 bytes are
random bit patterns, NaN, infinity and subnormals included; F32 holds specials too.

Outputs, in tests/fixtures/gguf/dequant/ (about 40 KB in all):
  TYPE.bin   the raw blocks, as a GGUF tensor holds them
  TYPE.f32   gguf-py's dequantization, little-endian float32
  index.json the types, element counts, gguf and numpy versions
and tests/fixtures/gguf/ggml_types.json: every ggml type's id, block size and block bytes, as
gguf-py's GGML_QUANT_SIZES has them (the reader's table is compared with it).

Usage: python3 scripts/gguf/make_dequant_reference.py   (needs `pip install gguf`; numpy)
The output depends only on the seed below and the gguf version; rerunning rewrites the same bytes.
"""
import importlib.metadata
import json
import pathlib

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType as T
from gguf import quants

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "gguf"
SEED = 20260321

# Byte offsets of the f16 scales in each block (ggml-common.h), set to finite values in random blocks.
SCALE_OFFSETS = {
    T.Q8_0: [0], T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2],
    T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}
QUANTIZABLE = [T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1]
BLOCKED = [T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q4_K, T.Q5_K, T.Q6_K]


def finite_f16(rng: np.random.Generator, n: int) -> np.ndarray:
    """Sane scales: magnitudes from 1e-4 to 1, either sign, one subnormal f16 among them."""
    v = rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-4, 0, n)
    v[0] = 3.0e-6  # an f16 subnormal: the scale path must handle those too
    return v.astype(np.float16)


def random_blocks(rng: np.random.Generator, qtype: T, n_blocks: int) -> np.ndarray:
    block_size, type_size = GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    for off in SCALE_OFFSETS[qtype]:
        raw[:, off:off + 2] = finite_f16(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
    return raw


def quantized_blocks(rng: np.random.Generator, qtype: T, n_blocks: int) -> np.ndarray:
    block_size, _ = GGML_QUANT_SIZES[qtype]
    # Blocks of different magnitudes, one with an offset, as weights and norms look.
    x = rng.standard_normal((n_blocks, block_size)).astype(np.float32)
    x *= (10.0 ** rng.uniform(-3, 1, (n_blocks, 1))).astype(np.float32)
    x[1] += np.float32(0.5)
    return quants.quantize(x, qtype).reshape(n_blocks, -1)


def plain_values(rng: np.random.Generator, qtype: T) -> np.ndarray:
    if qtype == T.F32:
        x = rng.standard_normal(64).astype(np.float32)
        x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -3.4028235e38, 1.17549435e-38]
        return x.view(np.uint8)
    bits = rng.integers(0, 1 << 16, size=256, dtype=np.uint16)  # every class of 16-bit float
    bits[:6] = [0x0000, 0x8000, 0x7C00, 0x0001, 0x7E00, 0xFFFF]
    return bits.view(np.uint8)


def dequantize(raw: np.ndarray, qtype: T) -> np.ndarray:
    return np.asarray(quants.dequantize(raw.reshape(-1), qtype), dtype=np.float32).reshape(-1)


def main() -> None:
    rng = np.random.default_rng(SEED)
    out = OUT / "dequant"
    out.mkdir(parents=True, exist_ok=True)
    index = {
        "made_by": "scripts/gguf/make_dequant_reference.py",
        "gguf": importlib.metadata.version("gguf"),
        "numpy": np.__version__,
        "seed": SEED,
        "types": [],
    }
    for qtype in [T.F32, T.F16, T.BF16] + BLOCKED:
        if qtype in BLOCKED:
            parts = []
            if qtype in QUANTIZABLE:
                parts.append(quantized_blocks(rng, qtype, 4))
            parts.append(random_blocks(rng, qtype, 4 if qtype in QUANTIZABLE else 3))
            raw = np.concatenate(parts).astype(np.uint8).reshape(-1)
        else:
            raw = plain_values(rng, qtype)
        values = dequantize(raw.copy(), qtype)
        block_size, type_size = GGML_QUANT_SIZES[qtype]
        assert raw.size % type_size == 0 and values.size == raw.size // type_size * block_size
        name = qtype.name.lower()
        (out / f"{name}.bin").write_bytes(raw.tobytes())
        (out / f"{name}.f32").write_bytes(values.astype("<f4").tobytes())
        index["types"].append({
            "type": qtype.name, "id": int(qtype), "elements": int(values.size), "bytes": int(raw.size),
            "quantized_by_gguf_py": qtype in QUANTIZABLE,
        })
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n")

    types = [{"name": t.name, "id": int(t), "block_size": bs, "block_bytes": ts}
             for t, (bs, ts) in sorted(GGML_QUANT_SIZES.items(), key=lambda kv: int(kv[0]))]
    (OUT / "ggml_types.json").write_text(json.dumps({
        "made_by": "scripts/gguf/make_dequant_reference.py",
        "gguf": importlib.metadata.version("gguf"), "types": types}, indent=1) + "\n")
    print(f"wrote {len(index['types'])} types to {out} and {len(types)} ggml types to {OUT / 'ggml_types.json'}")


if __name__ == "__main__":
    main()
