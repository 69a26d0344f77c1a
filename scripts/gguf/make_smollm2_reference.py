#!/usr/bin/env python3
"""Records what Hugging Face transformers computes with SmolLM2-135M-Instruct loaded from its GGUF
file, for tests/test_gguf_smollm2_reference.cpp (CPU) and tests/gpu/ (GPU) to compare fullgraph
against: the outside truth for a model that was trained.

transformers' GGUF loader (AutoModelForCausalLM.from_pretrained(gguf_file=...), which dequantizes
every tensor with the `gguf` package and undoes llama.cpp's Q/K permutation itself) runs the model
in float32 on the CPU with eager attention. Token ids come from the tokenizer that
make_tokenizer_reference.py builds (transformers' GGUF converter with llama.cpp's digit split);
they are stored, so fullgraph is fed the same ids.

Writes into tests/fixtures/gguf/:
  smollm2_logits.json        per prompt: its ids; the top-20 (id, logit) of every position; a
                             32-token greedy continuation with each step's top-1/top-2 margin;
                             the perplexity of tests/fixtures/text/kjv_genesis.txt as
                             `fullgraph perplexity` defines it (llama-perplexity's windows: chunks
                             of N tokens, the second half of each scored), per chunk, at N = 512
                             and 2048.
  smollm2_logits.safetensors the full float32 logits of every prompt's last position
                             ("last.P", shape [vocab]).

Usage: scripts/gguf/make_smollm2_reference.py [GGUF]
  (needs torch, transformers, gguf, tokenizers, safetensors; ~10 min on 2 cores, most of it the
  perplexity windows)
"""
import importlib.metadata
import json
import math
import pathlib
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import make_tokenizer_reference  # noqa: E402  (the GGUF tokenizer as the tokenizer references build it)

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
OUT = ROOT / "tests" / "fixtures" / "gguf"
TEXT = ROOT / "tests" / "fixtures" / "text" / "kjv_genesis.txt"
TOP_K = 20
GREEDY_TOKENS = 32
PERPLEXITY_CONTEXTS = [512, 2048]


def genesis_words(start, count):
    words = TEXT.read_text().split()
    return " ".join(words[start:start + count])


def prompts(tokenizer, config):
    """(name, ids) for ≥ 5 prompts from a few tokens up to 1,000."""
    chat = [{"role": "user", "content": "What is the capital of France?"}]
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    rendered = env.from_string(config["chat_template"]).render(
        messages=chat, add_generation_prompt=True, bos_token=config.get("bos_token", ""),
        eos_token=config.get("eos_token", ""))
    story = ("Once upon a time, in a small village at the edge of a great forest, there lived a girl "
             "who loved to read. Every evening she")
    texts = [
        ("capital", "The capital of France is"),
        ("chat_france", rendered),
        ("story", story),
        ("genesis_200", genesis_words(0, 300)),
        ("genesis_500", genesis_words(2000, 700)),
        ("genesis_1000", genesis_words(9000, 1300)),
    ]
    out = []
    for name, text in texts:
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        if name.startswith("genesis_"):
            ids = ids[:int(name.split("_")[1])]
        out.append((name, ids))
    return out


@torch.no_grad()
def record_prompt(model, ids):
    out = model(torch.tensor([ids]), use_cache=True)
    logits = out.logits[0].float()
    top = torch.topk(logits, TOP_K, dim=-1)
    entry = {
        "ids": ids,
        "top_ids": top.indices.tolist(),
        # 7 significant digits: float32's precision, far below the tests' tolerances
        "top_logits": [[float(f"{v:.7g}") for v in row] for row in top.values.tolist()],
    }
    greedy, margins, cache = [], [], out.past_key_values
    step_logits = logits[-1]
    for _ in range(GREEDY_TOKENS):
        two = torch.topk(step_logits, 2)
        greedy.append(int(two.indices[0]))
        margins.append(float(two.values[0] - two.values[1]))
        out = model(torch.tensor([[greedy[-1]]]), past_key_values=cache, use_cache=True)
        cache, step_logits = out.past_key_values, out.logits[0, -1].float()
    entry["greedy"] = greedy
    entry["greedy_margins"] = margins
    return entry, logits[-1].contiguous()


@torch.no_grad()
def perplexity(model, ids, context):
    """Per chunk (nll_sum, n_scored) as fullgraph perplexity / llama-perplexity define them."""
    chunks = []
    first = context // 2
    for start in range(0, len(ids) - context + 1, context):
        chunk = ids[start:start + context]
        logprobs = torch.log_softmax(model(torch.tensor([chunk])).logits[0].double(), dim=-1)
        targets = torch.tensor(chunk[first + 1:])
        nll = -logprobs[first:context - 1].gather(1, targets[:, None]).sum()
        chunks.append({"nll_sum": float(nll), "n_scored": context - 1 - first})
    total = sum(c["nll_sum"] for c in chunks)
    n = sum(c["n_scored"] for c in chunks)
    return {"context": context, "n_tokens": len(ids), "ppl": math.exp(total / n), "n_scored": n, "chunks": chunks}


def main() -> None:
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM

    model_path = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else MODEL
    torch.set_grad_enabled(False)
    tokenizer, config, how, _ = make_tokenizer_reference.build(model_path)
    started = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(str(model_path.parent), gguf_file=model_path.name,
                                                 dtype=torch.float32, attn_implementation="eager")
    model.eval()
    print(f"loaded in {time.perf_counter() - started:.1f} s; tokenizer: {how}")

    reference = {
        "made_by": "scripts/gguf/make_smollm2_reference.py",
        "transformers": importlib.metadata.version("transformers"), "torch": torch.__version__,
        "gguf": importlib.metadata.version("gguf"), "file": model_path.name,
        "dtype": "float32", "top_k": TOP_K, "prompts": [],
    }
    tensors = {}
    for index, (name, ids) in enumerate(prompts(tokenizer, config)):
        entry, last = record_prompt(model, ids)
        reference["prompts"].append({"name": name, **entry})
        tensors[f"last.{index}"] = last
        print(f"{name}: {len(ids)} tokens; greedy {tokenizer.decode(entry['greedy'])!r}")

    # The prompts are written first: the perplexity windows take most of the time.
    (OUT / "smollm2_logits.json").write_text(json.dumps(reference, separators=(",", ":")) + "\n")
    save_file(tensors, str(OUT / "smollm2_logits.safetensors"))
    text_ids = tokenizer.encode(TEXT.read_text(), add_special_tokens=False).ids
    reference["perplexity"] = {"text": str(TEXT.relative_to(ROOT)), "windows": []}
    for context in PERPLEXITY_CONTEXTS:
        started = time.perf_counter()
        result = perplexity(model, text_ids, context)
        reference["perplexity"]["windows"].append(result)
        print(f"perplexity at {context}: {result['ppl']:.4f} over {result['n_scored']} tokens "
              f"({len(text_ids)} in the text) in {time.perf_counter() - started:.0f} s")

    (OUT / "smollm2_logits.json").write_text(json.dumps(reference, separators=(",", ":")) + "\n")
    print(f"wrote {OUT / 'smollm2_logits.json'} and {OUT / 'smollm2_logits.safetensors'}")


if __name__ == "__main__":
    main()
