#!/usr/bin/env python3
"""Describes a real GGUF checkpoint with the `gguf` Python package, for tests/test_gguf_model.cpp.

Reads MODEL (default models/SmolLM2-135M-Instruct.Q4_1.gguf, fetched by scripts/setup.sh) with
gguf-py's GGUFReader and dequantizes every tensor with gguf-py, then writes a small JSON
(tests/fixtures/gguf/smollm2_135m_q4_1.json by default): the header numbers; every metadata key
with its type and, for scalars, its value, for arrays their length and a checksum of their
content; every tensor's name, ggml type, row-major shape, data offset, byte size, and the sum
and checksum of its fp32 dequantization.

The checksum (C++ twin in tests/test_gguf_model.cpp) is sum(b[i] * (2 i + 1)) mod 2^64 over a
byte or word sequence b: position-sensitive and bit-exact, and vectorizable in numpy. For a
tensor, b is the fp32 bit patterns of its values (uint32 words); for a numeric array, the bytes
as the file stores them; for a string array, each string's UTF-8 bytes preceded by its length as
8 little-endian bytes.

Usage: python3 scripts/gguf/make_model_reference.py [MODEL [OUT]]   (needs `pip install gguf`)
"""
import hashlib
import importlib.metadata
import json
import pathlib
import sys
import time

import numpy as np
from gguf import GGUFReader, GGUFValueType as V
from gguf import quants

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
OUT = ROOT / "tests" / "fixtures" / "gguf" / "smollm2_135m_q4_1.json"


def checksum(words: np.ndarray) -> int:
    w = words.astype(np.uint64, copy=False)
    weights = np.arange(w.size, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    with np.errstate(over="ignore"):
        return int(np.sum(w * weights, dtype=np.uint64))


def describe_field(field) -> dict:
    entry = {"key": field.name, "type": field.types[0].name.lower()}
    parts = [field.parts[i] for i in field.data]
    if field.types[0] != V.ARRAY:
        v = parts[0]
        entry["value"] = bytes(v).decode("utf-8") if field.types[0] == V.STRING else v.tolist()[0]
        return entry
    entry["element_type"] = field.types[1].name.lower()
    entry["count"] = len(parts)
    if field.types[1] == V.STRING:
        blob = b"".join(len(bytes(p)).to_bytes(8, "little") + bytes(p) for p in parts)
    else:
        blob = b"".join(np.ascontiguousarray(p).tobytes() for p in parts)
    entry["checksum"] = checksum(np.frombuffer(blob, dtype=np.uint8))
    if field.types[1] == V.STRING:
        entry["first"] = [bytes(p).decode("utf-8") for p in parts[:3]]
    return entry


def main() -> None:
    model = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else MODEL
    out = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else OUT
    reader = GGUFReader(model)
    fields = [describe_field(f) for k, f in reader.fields.items() if not k.startswith("GGUF.")]
    started = time.perf_counter()
    tensors = []
    for t in reader.tensors:
        values = np.asarray(quants.dequantize(np.asarray(t.data), t.tensor_type), dtype=np.float32).reshape(-1)
        ne = [int(d) for d in t.shape]
        tensors.append({
            "name": t.name, "type": t.tensor_type.name, "shape": list(reversed(ne)),
            "offset": int(t.data_offset - reader.data_offset), "size": int(t.n_bytes),
            "sum": float(np.sum(values, dtype=np.float64)), "checksum": checksum(values.view(np.uint32)),
        })
    seconds = time.perf_counter() - started
    sha = hashlib.sha256(model.read_bytes()).hexdigest()
    reference = {
        "made_by": "scripts/gguf/make_model_reference.py",
        "gguf": importlib.metadata.version("gguf"), "numpy": np.__version__,
        "file": model.name, "sha256": sha, "bytes": model.stat().st_size,
        "version": int(reader.fields["GGUF.version"].parts[-1][0]),
        "alignment": int(reader.alignment), "data_offset": int(reader.data_offset),
        "metadata": fields, "tensors": tensors,
    }
    out.write_text(json.dumps(reference, indent=0, ensure_ascii=False) + "\n")
    print(f"wrote {out}: {len(fields)} keys, {len(tensors)} tensors; gguf-py dequantized them in {seconds:.1f} s")


if __name__ == "__main__":
    main()
