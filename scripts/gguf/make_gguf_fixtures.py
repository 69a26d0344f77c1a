#!/usr/bin/env python3
"""Writes small whole GGUF files with the `gguf` Python package's GGUFWriter, and what they hold.

tests/test_gguf_files.cpp reads each FILE.gguf with fullgraph's reader and checks it against
FILE.json: every metadata key with its type and value, every tensor's ggml type, shape (row-major,
outermost first), data offset, byte size, and its values as gguf-py dequantizes them.

  small.gguf      GGUF v3, default alignment (32): a key of every value type, arrays of numbers,
                  bools and strings (UTF-8 included), and tensors of 1 to 4 dimensions in F32, F16,
                  BF16, Q8_0, Q4_1, Q4_K, plus I32 and Q2_K tensors that fullgraph reads but does
                  not dequantize.
  aligned64.gguf  general.alignment = 64, two tensors.
and the fuzzer's seeds in fuzz/corpus/gguf/: the two files above, and TYPE.gguf, one tiny tensor of
random bytes per type fullgraph dequantizes.

Usage: python3 scripts/gguf/make_gguf_fixtures.py   (needs `pip install gguf`; numpy)
Deterministic: the same gguf version rewrites the same bytes.
"""
import importlib.metadata
import json
import pathlib
import shutil

import numpy as np
from gguf import GGUFReader, GGUFValueType as V, GGUFWriter, GGMLQuantizationType as T
from gguf import quants

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "gguf"
SEED = 7


def metadata(w: GGUFWriter) -> None:
    w.add_name("tiny ünïcødé 🦙")
    w.add_key_value("test.u8", 200, V.UINT8)
    w.add_key_value("test.i8", -100, V.INT8)
    w.add_key_value("test.u16", 60000, V.UINT16)
    w.add_key_value("test.i16", -30000, V.INT16)
    w.add_key_value("test.u32", 4000000000, V.UINT32)
    w.add_key_value("test.i32", -2000000000, V.INT32)
    w.add_key_value("test.f32", 0.1, V.FLOAT32)
    w.add_key_value("test.u64", 2**63 + 5, V.UINT64)  # above int64: get_int must refuse it
    w.add_key_value("test.i64", -2**62, V.INT64)
    w.add_key_value("test.f64", 1.0 / 3.0, V.FLOAT64)
    w.add_key_value("test.true", True, V.BOOL)
    w.add_key_value("test.false", False, V.BOOL)
    w.add_key_value("test.empty_string", "", V.STRING)
    w.add_key_value("test.array.u8", [0, 1, 255], V.ARRAY, sub_type=V.UINT8)
    w.add_key_value("test.array.i32", [1, -2, 3, 2147483647], V.ARRAY, sub_type=V.INT32)
    w.add_key_value("test.array.u64", [0, 2**64 - 1], V.ARRAY, sub_type=V.UINT64)
    w.add_key_value("test.array.f32", [0.5, -1.25, 3.0e-8], V.ARRAY, sub_type=V.FLOAT32)
    w.add_key_value("test.array.f64", [0.1, -2.0], V.ARRAY, sub_type=V.FLOAT64)
    w.add_key_value("test.array.bool", [True, False, True], V.ARRAY, sub_type=V.BOOL)
    w.add_key_value("test.array.string", ["a", "", "ünï 🦙", "<|im_start|>", "Ġthe"], V.ARRAY, sub_type=V.STRING)


def tensors(rng: np.random.Generator) -> list[tuple[str, np.ndarray, T | None, tuple[int, ...]]]:
    """(name, array to write, raw ggml type or None, row-major element shape)."""
    out = []
    f32 = np.arange(12, dtype=np.float32).reshape(3, 4) - np.float32(5.5)
    out.append(("f32.matrix", f32, None, f32.shape))
    f16 = rng.standard_normal(8).astype(np.float16)
    out.append(("f16.vector", f16, None, f16.shape))
    bf16 = quants.quantize(rng.standard_normal((2, 8)).astype(np.float32), T.BF16)
    out.append(("bf16.matrix", bf16, T.BF16, (2, 8)))
    q8 = quants.quantize(rng.standard_normal((2, 64)).astype(np.float32), T.Q8_0)
    out.append(("q8_0.matrix", q8, T.Q8_0, (2, 64)))
    q41 = quants.quantize(rng.standard_normal((2, 3, 32)).astype(np.float32), T.Q4_1)
    out.append(("q4_1.cube", q41, T.Q4_1, (2, 3, 32)))
    q4k = rng.integers(0, 256, size=(1, 144), dtype=np.uint8)
    q4k[:, 0:4] = np.array([0.01, 0.002], dtype=np.float16).view(np.uint8)  # finite d and dmin
    out.append(("q4_k.row", q4k, T.Q4_K, (1, 256)))
    f32_4d = (np.arange(24, dtype=np.float32) * np.float32(0.25)).reshape(2, 1, 3, 4)
    out.append(("f32.four_dims", f32_4d, None, f32_4d.shape))
    ids = np.array([3, -1, 7, 0, 2147483647], dtype=np.int32)
    out.append(("i32.ids", ids, None, ids.shape))
    q2k = rng.integers(0, 256, size=(1, 84), dtype=np.uint8)
    out.append(("q2_k.row", q2k, T.Q2_K, (1, 256)))
    return out


def describe_fields(path: pathlib.Path) -> tuple[list[dict], GGUFReader]:
    reader = GGUFReader(path)
    keys = []
    for key, field in reader.fields.items():
        if key.startswith("GGUF."):
            continue  # the reader's own entries for the header counts, not metadata
        entry = {"key": key, "type": field.types[0].name}
        if field.types[0] == V.ARRAY:
            entry["element_type"] = field.types[1].name
        values = [field.parts[i] for i in field.data]
        if field.types[-1] == V.STRING:
            values = [bytes(v).decode("utf-8") for v in values]
        else:
            values = [v.tolist()[0] for v in values]
        if field.types[0] == V.ARRAY:
            entry["values"] = values
        else:
            entry["value"] = values[0]
        keys.append(entry)
    return keys, reader


def write(name: str, alignment: int | None, items) -> None:
    path = OUT / f"{name}.gguf"
    w = GGUFWriter(path, "llama")
    if alignment is not None:
        w.add_custom_alignment(alignment)
    if name == "small":
        metadata(w)
    for tname, array, raw, _ in items:
        w.add_tensor(tname, array, raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    keys, reader = describe_fields(path)
    shapes = {tname: shape for tname, _, _, shape in items}
    described = []
    for t in reader.tensors:
        ne = [int(d) for d in t.shape]
        entry = {"name": t.name, "type": t.tensor_type.name, "ne": ne, "shape": list(reversed(ne)),
                 "offset": int(t.data_offset - reader.data_offset), "size": int(t.n_bytes)}
        assert tuple(entry["shape"]) == tuple(shapes[t.name]), (t.name, entry["shape"], shapes[t.name])
        if t.tensor_type not in (T.I32, T.Q2_K):
            values = quants.dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32).reshape(-1)
            entry["values"] = [float(v) for v in values]
        described.append(entry)
    expected = {
        "made_by": "scripts/gguf/make_gguf_fixtures.py", "gguf": importlib.metadata.version("gguf"),
        "version": 3, "alignment": alignment or 32, "data_offset": int(reader.data_offset),
        "metadata": keys, "tensors": described,
    }
    (OUT / f"{name}.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {path} ({path.stat().st_size} bytes, {len(keys)} keys, {len(described)} tensors)")


def fuzz_seeds(rng: np.random.Generator) -> None:
    """One tiny file per handled type (one or two blocks), so the fuzzer starts on every block path."""
    out = ROOT / "fuzz" / "corpus" / "gguf"
    out.mkdir(parents=True, exist_ok=True)
    for qtype in [T.F32, T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q4_K, T.Q5_K, T.Q6_K]:
        block_size, type_size = quants.GGML_QUANT_SIZES[qtype]
        n = max(block_size, 8)
        raw = rng.integers(0, 256, size=(1, n // block_size * type_size), dtype=np.uint8)
        w = GGUFWriter(out / f"{qtype.name.lower()}.gguf", "llama")
        w.add_key_value("tokenizer.ggml.tokens", ["<s>", "a"], V.ARRAY, sub_type=V.STRING)
        w.add_tensor("w", raw, raw_dtype=qtype)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()


def main() -> None:
    rng = np.random.default_rng(SEED)
    OUT.mkdir(parents=True, exist_ok=True)
    fuzz_seeds(np.random.default_rng(SEED + 1))
    write("small", None, tensors(rng))
    aligned = [("first", np.arange(3, dtype=np.float32), None, (3,)),
               ("second", np.arange(64, dtype=np.float16).reshape(2, 32), None, (2, 32))]
    write("aligned64", 64, aligned)
    for name in ("small", "aligned64"):
        shutil.copyfile(OUT / f"{name}.gguf", ROOT / "fuzz" / "corpus" / "gguf" / f"{name}.gguf")


if __name__ == "__main__":
    main()
