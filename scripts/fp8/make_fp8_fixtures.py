#!/usr/bin/env python3
"""Writes FP8 versions of the shared tiny fixture models (../shared/testdata/models) in the two
checkpoint layouts fullgraph loads, with transformers reference logits, for
tests/test_fp8_checkpoint.cpp. Output: tests/fixtures/fp8/<name>/{config.json, model.safetensors,
reference.safetensors}.

Each fixture quantizes every q/k/v/o and gate/up/down projection that its ignore list leaves
(embeddings, norms and the LM head stay bf16, as llm-compressor leaves them):
  weight_scale s = amax / 448 (per output row, or over the whole matrix), q = e4m3(clamp(w / s)).
For static activation scales, each linear's input_scale = amax(input) / 448 over a calibration
prompt (the 130-token prompt_3 of the shared reference), run on the dequantized weights.

  tiny-llama-ct-dynamic      compressed-tensors FP8-dynamic (as RedHatAI's *-FP8-dynamic):
                             per-channel BF16 weight_scale [out, 1], per-token dynamic inputs
  tiny-llama-fp8-static      quant_method fp8, activation_scheme static (vLLM/AutoFP8 layout):
                             F32 weight_scale and input_scale of shape []
  tiny-qwen2-ct-static       compressed-tensors per-tensor weights and static inputs, F32 scales
                             of shape [1]; ignore also holds a regex leaving layer 1's down_proj bf16
  tiny-qwen3-fp8-dynamic     quant_method fp8, activation_scheme dynamic; ignored_layers leaves
                             layer 0's whole self_attn bf16 (a parent-module entry)
  tiny-llama3-rope-ct-weight compressed-tensors weight-only FP8 (input_activations null)
  tiny-llama-ct-kv-static    tiny-llama-ct-dynamic plus an FP8 KV cache with checkpoint scales
                             (kv_cache_scheme as llm-compressor writes it): per layer
                             self_attn.k_scale / v_scale = amax(K) / 448, amax(V) / 448 (after
                             RoPE) over the calibration prompt; F32 of shape []

The reference is transformers in float32 on the DEQUANTIZED weights (fp8.float() * scale): the
bf16 model is loaded as float32, each quantized linear's weight is replaced by its dequantized
weight and, for quantized activations, its forward rounds its input first exactly as fullgraph's
Backend::fp8_round does: s = amax(row) / 448 (dynamic; 1 where that is 0) or input_scale
(static), x = e4m3(clamp(x / s, -448, 448)).float() * s, then F.linear. Logits of prompt_0..2
(lengths 1, 7, 33) of the shared reference are stored as prompt_i.input_ids I32 [T] and
prompt_i.logits F32 [T, V]. With KV-cache scales, the reference's attention also sees every key and
value as fullgraph's FP8 cache stores them: e4m3(clamp(x / scale, -448, 448)).float() * scale.

Usage: OMP_NUM_THREADS=1 python3 scripts/fp8/make_fp8_fixtures.py [fixture names; all by default]
(torch, transformers, safetensors)
"""
import contextlib
import copy
import importlib
import json
import pathlib
import re
import sys

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT.parent / "shared" / "testdata" / "models"
OUT = ROOT / "tests" / "fixtures" / "fp8"
E4M3_MAX = 448.0
LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
EVAL_PROMPTS = (0, 1, 2)
CALIBRATION_PROMPT = 3


def ct_scheme(strategy, dynamic):
    """A compressed-tensors QuantizationArgs object as llm-compressor writes it."""
    return {"actorder": None, "block_structure": None, "dynamic": dynamic, "group_size": None, "num_bits": 8,
            "observer": None if dynamic else "minmax", "observer_kwargs": {}, "strategy": strategy,
            "symmetric": True, "type": "float"}


def ct_config(weight_strategy, inputs, ignore):
    return {
        "config_groups": {"group_0": {"input_activations": inputs, "output_activations": None,
                                      "targets": ["Linear"], "weights": ct_scheme(weight_strategy, False)}},
        "format": "float-quantized", "global_compression_ratio": None, "ignore": ignore,
        "kv_cache_scheme": None, "quant_method": "compressed-tensors", "quantization_status": "compressed",
    }


def with_kv_cache(quant):
    quant = copy.deepcopy(quant)
    quant["kv_cache_scheme"] = ct_scheme("tensor", False)
    return quant


# name: (source model, quantization_config, per_channel, activations, scale dtype, scale shape)
FIXTURES = {
    "tiny-llama-ct-dynamic": ("tiny-llama", ct_config("channel", ct_scheme("token", True), ["lm_head"]),
                              True, "dynamic", torch.bfloat16, None),
    "tiny-llama-fp8-static": ("tiny-llama", {"quant_method": "fp8", "activation_scheme": "static",
                                             "ignored_layers": ["lm_head"]},
                              False, "static", torch.float32, ()),
    "tiny-qwen2-ct-static": ("tiny-qwen2", ct_config("tensor", ct_scheme("tensor", False),
                                                     ["lm_head", r"re:.*layers\.1\.mlp\.down_proj"]),
                             False, "static", torch.float32, (1,)),
    "tiny-qwen3-fp8-dynamic": ("tiny-qwen3", {"quant_method": "fp8", "activation_scheme": "dynamic",
                                              "ignored_layers": ["lm_head", "model.layers.0.self_attn"]},
                               False, "dynamic", torch.float32, ()),
    "tiny-llama3-rope-ct-weight": ("tiny-llama3-rope", ct_config("channel", None, ["lm_head"]),
                                   True, None, torch.bfloat16, None),
    "tiny-llama-ct-kv-static": ("tiny-llama", with_kv_cache(ct_config("channel", ct_scheme("token", True), ["lm_head"])),
                                True, "dynamic", torch.bfloat16, None),
}
FAMILIES = {"tiny-llama": "llama", "tiny-llama3-rope": "llama", "tiny-qwen2": "qwen2", "tiny-qwen3": "qwen3"}


@contextlib.contextmanager
def attention_kv(family, transform):
    """While inside, the family's eager attention sees (k, v) = transform(layer index, k, v): the
    keys after RoPE and the values, before the heads are repeated for GQA."""
    module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
    original = module.eager_attention_forward

    def patched(m, q, k, v, *args, **kwargs):
        k, v = transform(m.layer_idx, k, v)
        return original(m, q, k, v, *args, **kwargs)

    module.eager_attention_forward = patched
    try:
        yield
    finally:
        module.eager_attention_forward = original


def through_e4m3(x, scale):
    return (x / scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn).float() * scale


def calibrate_kv_scales(model, family, ids):
    """Per layer, amax(K) / 448 and amax(V) / 448 over the prompt `ids`."""
    amax = {}

    def observe(layer, k, v):
        ka, va = amax.get(layer, (torch.tensor(0.0), torch.tensor(0.0)))
        amax[layer] = (torch.maximum(ka, k.abs().amax()), torch.maximum(va, v.abs().amax()))
        return k, v

    with attention_kv(family, observe), torch.no_grad():
        model(ids.long()[None])
    return {layer: ((k / E4M3_MAX).float(), (v / E4M3_MAX).float()) for layer, (k, v) in amax.items()}


def ignored(module, entries):
    for e in entries:
        if e.startswith("re:"):
            if re.fullmatch(e[3:], module):
                return True
        elif module == e or module.startswith(e + "."):
            return True
    return False


def round_input(x, scale):
    """fullgraph's Backend::fp8_round: scale None means per row from the row's max."""
    if scale is None:
        s = x.abs().amax(dim=-1, keepdim=True) / E4M3_MAX
        s = torch.where(s == 0, torch.ones_like(s), s)
    else:
        s = scale
    return (x / s).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn).float() * s


def quantize_weight(w, per_channel, scale_dtype):
    amax = w.abs().amax(dim=1, keepdim=True) if per_channel else w.abs().amax()
    scale = (amax / E4M3_MAX).to(scale_dtype)  # stored as the checkpoint stores it
    q = (w / scale.float()).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
    return q, scale


def make(name, source, quant, per_channel, activations, scale_dtype, scale_shape):
    src = MODELS / source
    model = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    reference = load_file(src / "reference.safetensors")
    tensors = load_file(src / "model.safetensors")
    ignore = quant.get("ignore", []) + quant.get("ignored_layers", [])

    quantized = {}  # module name -> nn.Linear
    for module_name, module in model.named_modules():
        if module_name.split(".")[-1] in LINEARS and not ignored(module_name, ignore):
            quantized[module_name] = module
    for module_name, module in quantized.items():
        q, scale = quantize_weight(module.weight.data, per_channel, scale_dtype)
        module.weight.data = q.float() * scale.float()
        tensors[module_name + ".weight"] = q
        tensors[module_name + ".weight_scale"] = scale if scale_shape is None else scale.reshape(scale_shape)

    input_scales = {}
    if activations == "static":
        amax = {}
        hooks = [m.register_forward_pre_hook(lambda m, args, n=n: amax.__setitem__(
                     n, torch.maximum(amax.get(n, torch.tensor(0.0)), args[0].abs().amax())))
                 for n, m in quantized.items()]
        with torch.no_grad():
            model(reference[f"prompt_{CALIBRATION_PROMPT}.input_ids"].long()[None])
        for h in hooks:
            h.remove()
        for n in quantized:
            input_scales[n] = (amax[n] / E4M3_MAX).float()
            tensors[n + ".input_scale"] = input_scales[n].reshape(scale_shape).contiguous()

    if activations is not None:
        for n, m in quantized.items():
            scale = input_scales.get(n)
            m.forward = lambda x, m=m, scale=scale: F.linear(round_input(x, scale), m.weight, m.bias)

    kv_rounding = contextlib.nullcontext()
    if quant.get("kv_cache_scheme"):
        scales = calibrate_kv_scales(model, FAMILIES[source], reference[f"prompt_{CALIBRATION_PROMPT}.input_ids"])
        for layer, (k_scale, v_scale) in scales.items():
            tensors[f"model.layers.{layer}.self_attn.k_scale"] = k_scale.reshape(())
            tensors[f"model.layers.{layer}.self_attn.v_scale"] = v_scale.reshape(())
        kv_rounding = attention_kv(FAMILIES[source], lambda layer, k, v: (through_e4m3(k, scales[layer][0]),
                                                                          through_e4m3(v, scales[layer][1])))

    out_dir = OUT / name
    out_dir.mkdir(parents=True, exist_ok=True)
    config = json.loads((src / "config.json").read_text())
    config["quantization_config"] = copy.deepcopy(quant)
    (out_dir / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    save_file({k: v.contiguous() for k, v in tensors.items()}, out_dir / "model.safetensors")

    ref = {}
    with kv_rounding, torch.no_grad():
        for i in EVAL_PROMPTS:
            ids = reference[f"prompt_{i}.input_ids"]
            ref[f"prompt_{i}.input_ids"] = ids.to(torch.int32)
            ref[f"prompt_{i}.logits"] = model(ids.long()[None]).logits[0].float().contiguous()
    save_file(ref, out_dir / "reference.safetensors")
    sizes = sum(p.stat().st_size for p in out_dir.iterdir())
    print(f"{name}: {len(quantized)} quantized linears, {sizes} bytes")


def main():
    torch.manual_seed(0)
    for name in sys.argv[1:] or FIXTURES:
        make(name, *FIXTURES[name])


if __name__ == "__main__":
    main()
