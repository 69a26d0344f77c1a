#!/usr/bin/env python3
"""Writes the shared tiny fixture models (../shared/testdata/models) as GGUF files, the way
llama.cpp's convert_hf_to_gguf.py would, for tests/test_gguf_load.cpp.

  tiny-llama.gguf        every tensor in a type that holds its bf16 values exactly (F32, F16 where
                         each value survives the trip, BF16), so fullgraph's logits from it must equal
                         the logits from the safetensors folder bit for bit on the CPU.
  tiny-llama-q8_0.gguf   the same with some matrices in Q8_0; tiny-llama-q8_0.dequantized.safetensors
                         holds those tensors as gguf-py dequantizes them (F32, Hugging Face names and
                         row order), so the loaded weights can be compared exactly.
  tiny-qwen2.gguf        q/k/v biases and tied embeddings; qwen2 is not permuted by the converter.
  tiny-qwen3.gguf        q/k norms; not permuted either.

For the `llama` architecture the converter permutes the rows of attn_q and attn_k (weights and
biases) so that ggml's RoPE, which rotates adjacent pairs, computes what Hugging Face's, which
rotates the two halves of each head, computes. Within each head of D rows the converter views the
rows as (2, D/2) and transposes to (D/2, 2): the GGUF row h*D + 2*j + i holds the Hugging Face row
h*D + i*D/2 + j (i in {0, 1}, j < D/2). K uses the KV head count. fullgraph must undo exactly this.

Q8_0 works on whole rows, so quantizing the permuted rows quantizes each row as it would be
unpermuted: the dequantized reference is dequantize(quantize(W)) in Hugging Face row order, which
this script computes without any inverse permutation of its own (and asserts the commutation).

Usage: python3 scripts/gguf/make_gguf_model_fixtures.py   (needs `pip install gguf`; numpy, safetensors)
"""
import json
import pathlib
import struct

import numpy as np
from gguf import GGUFWriter, GGMLQuantizationType as T
from gguf import quants
from safetensors.numpy import save_file

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT.parent / "shared" / "testdata" / "models"
OUT = ROOT / "tests" / "fixtures" / "gguf" / "models"

ARCH = {"LlamaForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3"}


def read_bf16_safetensors(path: pathlib.Path) -> dict[str, np.ndarray]:
    """BF16 tensors as uint16 arrays (numpy has no bfloat16)."""
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "BF16", (name, info["dtype"])
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + begin : 8 + n + end], dtype=np.uint16).reshape(info["shape"])
    return out


def bf16_to_f32(a: np.ndarray) -> np.ndarray:
    return (a.astype(np.uint32) << 16).view(np.float32)


def permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """convert_hf_to_gguf's LlamaModel.permute: per head, rows (2, D/2) -> (D/2, 2)."""
    d = w.shape[0] // n_head
    return w.reshape(n_head, 2, d // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_name(hf: str) -> str:
    fixed = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    if hf in fixed:
        return fixed[hf]
    parts = hf.split(".")
    layer, rest = parts[2], ".".join(parts[3:])
    names = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
             "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
             "self_attn.k_norm": "attn_k_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down"}
    module, kind = rest.rsplit(".", 1)
    return f"blk.{layer}.{names[module]}.{kind}"


def f16_exact(values: np.ndarray) -> bool:
    return np.array_equal(values.astype(np.float16).astype(np.float32), values)


def write_model(src: str, out_name: str, q8_0: set[str] = frozenset()) -> None:
    config = json.loads((MODELS / src / "config.json").read_text())
    arch = ARCH[config["architectures"][0]]
    tensors = read_bf16_safetensors(MODELS / src / "model.safetensors")
    n_head, n_kv = config["num_attention_heads"], config["num_key_value_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // n_head
    rope = config["rope_parameters"]
    assert rope["rope_type"] == "default", src

    w = GGUFWriter(str(OUT / out_name), arch)
    w.add_name(src)
    w.add_context_length(config["max_position_embeddings"])
    w.add_embedding_length(config["hidden_size"])
    w.add_block_count(config["num_hidden_layers"])
    w.add_feed_forward_length(config["intermediate_size"])
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(rope["rope_theta"])
    w.add_layer_norm_rms_eps(config["rms_norm_eps"])
    w.add_vocab_size(config["vocab_size"])
    if config.get("bos_token_id") is not None:
        w.add_bos_token_id(config["bos_token_id"])
    if config.get("eos_token_id") is not None:
        w.add_eos_token_id(config["eos_token_id"])

    dequantized = {}
    kinds = {}
    for i, (name, raw) in enumerate(sorted(tensors.items())):
        if name == "lm_head.weight" and config.get("tie_word_embeddings"):
            continue
        values = bf16_to_f32(raw)
        permuted = arch == "llama" and (".q_proj." in name or ".k_proj." in name)
        heads = n_head if ".q_proj." in name else n_kv
        order = (lambda a: permute(a, heads)) if permuted else (lambda a: a)
        target = gguf_name(name)
        if name in q8_0:
            q = quants.quantize(values, T.Q8_0)
            assert np.array_equal(quants.quantize(order(values), T.Q8_0), order(q))  # rows quantize alone
            dequantized[name] = quants.dequantize(q, T.Q8_0).astype(np.float32)
            w.add_tensor(target, order(q), raw_dtype=T.Q8_0)
            kinds[target] = "Q8_0"
        elif values.ndim == 1 or i % 3 == 0:
            w.add_tensor(target, order(values))
            kinds[target] = "F32"
        elif i % 3 == 1 and f16_exact(values):
            w.add_tensor(target, order(values).astype(np.float16))
            kinds[target] = "F16"
        else:
            w.add_tensor(target, np.ascontiguousarray(order(raw)).view(np.uint8), raw_dtype=T.BF16)
            kinds[target] = "BF16"
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    if dequantized:
        save_file(dequantized, str(OUT / out_name.replace(".gguf", ".dequantized.safetensors")))
    counts = {k: list(kinds.values()).count(k) for k in sorted(set(kinds.values()))}
    print(f"{out_name}: {counts}")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    write_model("tiny-llama", "tiny-llama.gguf")
    write_model("tiny-llama", "tiny-llama-q8_0.gguf",
                q8_0={"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
                      "model.layers.0.self_attn.k_proj.weight", "model.layers.1.mlp.down_proj.weight",
                      "lm_head.weight"})
    write_model("tiny-qwen2", "tiny-qwen2.gguf")
    write_model("tiny-qwen3", "tiny-qwen3.gguf")


if __name__ == "__main__":
    main()
