#!/usr/bin/env python3
"""How often fp32 summation order flips an e4m3 rounding in the FP8 fixtures (tests/fixtures/fp8):
runs each fixture's reference forward (as make_fp8_fixtures.py does, from the fixture's own
tensors) twice, with F.linear and with the matmuls in float64, and prints the logits' relative
difference per prompt and how many rounded activation elements got another e4m3 code. Explains
the tolerance of tests/test_fp8_checkpoint.cpp.

Usage: OMP_NUM_THREADS=1 python3 scripts/fp8/measure_rounding_flips.py
"""
import pathlib
import sys

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import make_fp8_fixtures as fixtures  # noqa: E402


def reference_forward(name, double):
    """The fixture's reference logits per prompt, and the e4m3 codes of every rounded input."""
    source, _, _, activations, _, _ = fixtures.FIXTURES[name]
    folder = fixtures.OUT / name
    model = AutoModelForCausalLM.from_pretrained(fixtures.MODELS / source, dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    tensors = load_file(folder / "model.safetensors")
    codes = []
    for module_name, module in model.named_modules():
        if module_name + ".weight_scale" not in tensors:
            continue
        weight, scale = tensors[module_name + ".weight"], tensors[module_name + ".weight_scale"].float()
        module.weight.data = weight.float() * (scale.reshape(-1, 1) if scale.dim() == 2 else scale.reshape(()))
        input_scale = tensors.get(module_name + ".input_scale")
        input_scale = None if input_scale is None else input_scale.float().reshape(())

        def forward(x, module=module, input_scale=input_scale):
            if activations is not None:
                s = x.abs().amax(-1, keepdim=True) / fixtures.E4M3_MAX if input_scale is None else input_scale
                if input_scale is None:
                    s = torch.where(s == 0, torch.ones_like(s), s)
                q = (x / s).clamp(-fixtures.E4M3_MAX, fixtures.E4M3_MAX).to(torch.float8_e4m3fn)
                codes.append(q.view(torch.uint8).flatten())
                x = q.float() * s
            if not double:
                return F.linear(x, module.weight, module.bias)
            y = x.double() @ module.weight.double().T
            return (y if module.bias is None else y + module.bias.double()).float()

        module.forward = forward
    reference = load_file(folder / "reference.safetensors")
    with torch.no_grad():
        logits = [model(reference[f"prompt_{i}.input_ids"].long()[None]).logits[0] for i in fixtures.EVAL_PROMPTS]
    return logits, codes


def main():
    for name in fixtures.FIXTURES:
        a, codes_a = reference_forward(name, False)
        b, codes_b = reference_forward(name, True)
        flips = sum((x != y).sum().item() for x, y in zip(codes_a, codes_b))
        total = sum(x.numel() for x in codes_a)
        rel = ", ".join(f"{((x - y).abs().max() / x.abs().max()).item():.2g}" for x, y in zip(a, b))
        print(f"{name}: logits relative difference per prompt {rel}; e4m3 codes flipped {flips} of {total}")


if __name__ == "__main__":
    main()
