#!/usr/bin/env python3
"""References for --quantization fp8 (quantizing a float checkpoint's linears at load), for
tests/test_fp8_quantize_at_load.cpp and tests/gpu/test_fp8_models_gpu.cpp, and the measurement of
what that quantization costs against the BF16 references.

For each shared tiny fixture model (../shared/testdata/models), transformers in float32 with every
q/k/v/o and gate/up/down projection quantized as fullgraph's --quantization fp8 does it:
  weight: s = amax(row) / 448 in fp32 (1 where 0), q = e4m3(w / s), run as q.float() * s;
  input:  per token, s = amax(row) / 448 (1 where 0), x = e4m3(clamp(x / s)).float() * s
(make_fp8_fixtures.py's round_input). Embeddings, norms and the LM head stay as they are.

Writes tests/fixtures/fp8/quantized-at-load/<model>.safetensors (prompt_i.input_ids I32 [T],
prompt_i.logits F32 [T, V] for the shared reference's prompts 0..2, lengths 1, 7 and 33) and
distance_to_bf16.json: ||logits - bf16 reference|| / ||bf16 reference|| per prompt, for this
quantized model and, as the floor, for the unquantized float32 model.

Usage: OMP_NUM_THREADS=1 python3 scripts/fp8/make_quantize_at_load_reference.py
"""
import json
import pathlib

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

from make_fp8_fixtures import LINEARS, MODELS, OUT, round_input

MODELS_QUANTIZED = ("tiny-llama", "tiny-llama3-rope", "tiny-qwen2", "tiny-qwen3")
EVAL_PROMPTS = (0, 1, 2)


def quantize_per_channel(w):
    scale = w.abs().amax(dim=1, keepdim=True) / 448.0
    scale = torch.where(scale == 0, torch.ones_like(scale), scale)
    return (w / scale).to(torch.float8_e4m3fn).float() * scale


def logits(model, reference):
    with torch.no_grad():
        return {i: model(reference[f"prompt_{i}.input_ids"].long()[None]).logits[0].float() for i in EVAL_PROMPTS}


def distance(got, ref):
    return float((got - ref).norm() / ref.norm())


def main():
    out_dir = OUT / "quantized-at-load"
    out_dir.mkdir(parents=True, exist_ok=True)
    report = {}
    for name in MODELS_QUANTIZED:
        src = MODELS / name
        reference = load_file(src / "reference.safetensors")
        model = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32, attn_implementation="eager").eval()
        floor = logits(model, reference)
        for module_name, module in model.named_modules():
            if module_name.split(".")[-1] in LINEARS:
                module.weight.data = quantize_per_channel(module.weight.data)
                module.forward = lambda x, m=module: F.linear(round_input(x, None), m.weight, m.bias)
        quantized = logits(model, reference)
        tensors = {}
        for i in EVAL_PROMPTS:
            tensors[f"prompt_{i}.input_ids"] = reference[f"prompt_{i}.input_ids"].to(torch.int32)
            tensors[f"prompt_{i}.logits"] = quantized[i].contiguous()
        save_file(tensors, out_dir / f"{name}.safetensors")
        report[name] = {
            str(len(reference[f"prompt_{i}.input_ids"])): {
                "quantized": distance(quantized[i], reference[f"prompt_{i}.logits"].float()),
                "float32": distance(floor[i], reference[f"prompt_{i}.logits"].float()),
            } for i in EVAL_PROMPTS}
        print(name, json.dumps(report[name]))
    (out_dir / "distance_to_bf16.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
