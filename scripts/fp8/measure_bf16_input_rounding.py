#!/usr/bin/env python3
"""What BF16 activations cost a model whose linears round their inputs to e4m3, measured in
transformers: the FP8 fixtures (make_fp8_fixtures.py) and the models quantized at load
(make_quantize_at_load_reference.py) run as their references do, except that every quantized
linear's input is first rounded to bf16, as a GPU that keeps bf16 activations hands it over.
Likewise for an FP8 KV cache (make_kv_cache_reference.py): every key and value rounded to bf16
before e4m3, as the GPU's cache write receives them (keys "kv-cache/<model>").

An input within bf16 noise of a midpoint between two e4m3 values rounds to the other one, which
moves it by 1/16 of itself; a few percent of the elements do, so the logits move by a few percent
of their norm, where plain bf16 activations move them by ~1%. tests/gpu/test_fp8_models_gpu.cpp
derives its bounds from these numbers. Writes tests/fixtures/fp8/bf16_input_distance.json:
{model: {prompt length: ||logits - reference|| / ||reference||}}.

Usage: OMP_NUM_THREADS=1 python3 scripts/fp8/measure_bf16_input_rounding.py
"""
import json

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

import make_fp8_fixtures as fixtures
import make_kv_cache_reference as kv_reference
from make_quantize_at_load_reference import MODELS_QUANTIZED, quantize_per_channel


def bf16_rounded_input(scale):
    return lambda x, m: F.linear(fixtures.round_input(x.to(torch.bfloat16).float(), scale), m.weight, m.bias)


def distances(model, reference):
    out = {}
    with torch.no_grad():
        for i in (0, 1, 2):
            ids = reference[f"prompt_{i}.input_ids"]
            got = model(ids.long()[None]).logits[0].float()
            ref = reference[f"prompt_{i}.logits"].float()
            out[str(len(ids))] = float((got - ref).norm() / ref.norm())
    return out


def fp8_fixture(name):
    """The fixture's checkpoint as the reference runs it: dequantized weights, inputs rounded."""
    fx = fixtures.OUT / name
    tensors = load_file(fx / "model.safetensors")
    source, quant, _, activations, _, _ = fixtures.FIXTURES[name]
    model = AutoModelForCausalLM.from_pretrained(fixtures.MODELS / source, dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    for module_name, module in model.named_modules():
        if module_name + ".weight_scale" not in tensors:
            continue
        scale = tensors[module_name + ".weight_scale"].float()
        module.weight.data = tensors[module_name + ".weight"].float() * scale.reshape(-1, 1)
        input_scale = tensors.get(module_name + ".input_scale")
        rounded = bf16_rounded_input(None if input_scale is None else input_scale.float().reshape(()))
        module.forward = lambda x, m=module, f=rounded: f(x, m)
    return distances(model, load_file(fx / "reference.safetensors"))


def quantized_at_load(name):
    model = AutoModelForCausalLM.from_pretrained(fixtures.MODELS / name, dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    rounded = bf16_rounded_input(None)
    for module_name, module in model.named_modules():
        if module_name.split(".")[-1] in fixtures.LINEARS:
            module.weight.data = quantize_per_channel(module.weight.data)
            module.forward = lambda x, m=module: rounded(x, m)
    return distances(model, load_file(fixtures.OUT / "quantized-at-load" / f"{name}.safetensors"))


def kv_cache(name):
    bf16_then_e4m3 = lambda x: kv_reference.through_e4m3(x.to(torch.bfloat16).float())
    with kv_reference.attention_rounding(kv_reference.FAMILIES[name], bf16_then_e4m3):
        model = AutoModelForCausalLM.from_pretrained(fixtures.MODELS / name, dtype=torch.float32,
                                                     attn_implementation="eager").eval()
        return distances(model, load_file(fixtures.OUT / "kv-cache" / f"{name}.safetensors"))


def main():
    report = {}
    for name, spec in fixtures.FIXTURES.items():
        # Activations quantized; the fixture with KV-cache scales runs on the CPU only.
        if spec[3] is not None and not spec[1].get("kv_cache_scheme"):
            report[name] = fp8_fixture(name)
            print(name, report[name])
    for name in MODELS_QUANTIZED:
        report[name] = quantized_at_load(name)
        print(name, report[name])
    for name in kv_reference.FAMILIES:
        report["kv-cache/" + name] = kv_cache(name)
        print("kv-cache/" + name, report["kv-cache/" + name])
    (fixtures.OUT / "bf16_input_distance.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
