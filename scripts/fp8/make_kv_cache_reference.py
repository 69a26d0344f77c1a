#!/usr/bin/env python3
"""References for an FP8 KV cache (--kv-cache-dtype fp8), for tests/test_fp8_kv_cache.cpp.

For each shared tiny fixture model (../shared/testdata/models), transformers in float32 whose
attention sees every key and value (after RoPE, before the heads are repeated for GQA) rounded
through e4m3 as fullgraph's FP8 cache stores them with the default scale 1.0:
x = e4m3(clamp(x / 1.0, -448, 448)).float() * 1.0. Writes
tests/fixtures/fp8/kv-cache/<model>.safetensors: prompt_i.input_ids I32 [T] and prompt_i.logits
F32 [T, V] for the shared reference's prompts 0..2 (lengths 1, 7 and 33).

Usage: OMP_NUM_THREADS=1 python3 scripts/fp8/make_kv_cache_reference.py
"""
import contextlib
import importlib

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

from make_fp8_fixtures import E4M3_MAX, MODELS, OUT

FAMILIES = {"tiny-llama": "llama", "tiny-llama3-rope": "llama", "tiny-qwen2": "qwen2", "tiny-qwen3": "qwen3"}
EVAL_PROMPTS = (0, 1, 2)


def through_e4m3(x, scale=1.0):
    return (x / scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn).float() * scale


@contextlib.contextmanager
def attention_rounding(family, rounding):
    """The family's eager attention sees its keys and values through `rounding` while inside."""
    module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
    original = module.eager_attention_forward
    module.eager_attention_forward = lambda m, q, k, v, *args, **kwargs: original(
        m, q, rounding(k), rounding(v), *args, **kwargs)
    try:
        yield
    finally:
        module.eager_attention_forward = original


def main():
    out_dir = OUT / "kv-cache"
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, family in FAMILIES.items():
        with attention_rounding(family, through_e4m3):
            model = AutoModelForCausalLM.from_pretrained(MODELS / name, dtype=torch.float32,
                                                         attn_implementation="eager").eval()
            reference = load_file(MODELS / name / "reference.safetensors")
            tensors = {}
            with torch.no_grad():
                for i in EVAL_PROMPTS:
                    ids = reference[f"prompt_{i}.input_ids"]
                    tensors[f"prompt_{i}.input_ids"] = ids.to(torch.int32)
                    logits = model(ids.long()[None]).logits[0].float()
                    tensors[f"prompt_{i}.logits"] = logits.contiguous()
                    ref = reference[f"prompt_{i}.logits"].float()
                    print(name, len(ids), "||fp8 kv - bf16 ref|| / ||ref|| =", float((logits - ref).norm() / ref.norm()))
            save_file(tensors, out_dir / f"{name}.safetensors")


if __name__ == "__main__":
    main()
