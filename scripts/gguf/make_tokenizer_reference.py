#!/usr/bin/env python3
"""Records what Hugging Face's own GGUF tokenizer support makes of a GGUF file's tokenizer, for
tests/test_gguf_tokenizer_reference.cpp to compare fullgraph's GGUF tokenizer against.

The tokenizer is built by transformers' GGUF converter
(transformers.integrations.gguf.gguf_tokenizer_mapping.convert_gguf_tokenizer) from the metadata
read with the `gguf` package. AutoTokenizer.from_pretrained(gguf_file=...) is tried first; without
torch its metadata reader cannot be imported, and then the same converter is fed the same
dictionary that get_gguf_tokenizer() would build.

One correction is applied, and printed: transformers knows no split regex for
tokenizer.ggml.pre = "smollm" (and the other llama.cpp pre types that split digits one by one) and
falls back to GPT-2's ByteLevel split, while llama.cpp (llama-vocab.cpp: SMOLLM, STARCODER, REFACT,
COMMAND_R, CODESHELL, EXAONE, MINERVA) splits every \\p{N} first, as SmolLM2's own tokenizer.json
does (Digits(individual_digits) before ByteLevel). The reference uses llama.cpp's split; the script
prints how many strings the uncorrected converter tokenizes differently.

Records, into tests/fixtures/gguf/NAME_tokenizer.json:
  texts: ≥ 2,000 strings of tests/python/tokenizer_corpus.py plus special-token texts;
  ids: [ids without specials added, ids with specials added] per text (one list when equal);
  decode: for each text, decode(ids, skip_special_tokens=False) and (True) where it is not the text;
  chats: conversations rendered with tokenizer.chat_template through jinja2 set up as transformers'
         apply_chat_template sets it up, with add_generation_prompt false and true.

Usage: scripts/gguf/make_tokenizer_reference.py [GGUF] [OUT]
  (needs transformers, tokenizers, gguf, jinja2; default GGUF models/SmolLM2-135M-Instruct.Q4_1.gguf)
"""
import json
import pathlib
import random
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))

import tokenizer_corpus  # noqa: E402
from test_chat_template_differential import reference_environment  # noqa: E402

SEED = 3205
CORPUS_SIZE = 2000
CONVERSATIONS = 24
DIGIT_SPLIT_PRE = {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva"}


def read_tokenizer_dict(path):
    """get_gguf_tokenizer()'s (architecture, tokenizer_dict, tokenizer_config), read with gguf-py."""
    from gguf import GGUFReader
    from transformers.integrations.gguf.gguf_tokenizer_mapping import GGUF_TOKENIZER_MAPPING, _SPECIAL_TOKENS

    reader = GGUFReader(path)
    metadata = {name: field.contents() for name, field in reader.fields.items()}
    grouped = {
        group: {name: metadata[f"tokenizer.{key}"] for key, name in renames.items() if f"tokenizer.{key}" in metadata}
        for group, renames in GGUF_TOKENIZER_MAPPING.items()
    }
    tokenizer, config = grouped["tokenizer"], grouped["tokenizer_config"]
    if tokenizer.get("tokenizer_type") == "llama":
        config.setdefault("add_bos_token", True)
    for name, key in _SPECIAL_TOKENS.items():
        token_id = metadata.get(f"tokenizer.ggml.{key}")
        config[name] = tokenizer["tokens"][token_id] if token_id is not None else None
    return metadata["general.architecture"], tokenizer, config


def build(path):
    """(tokenizers.Tokenizer, tokenizer_config, how it was built)."""
    from tokenizers import pre_tokenizers
    from transformers.integrations.gguf.gguf_tokenizer_mapping import convert_gguf_tokenizer

    architecture, tokenizer_dict, config = read_tokenizer_dict(path)
    try:
        from transformers import AutoTokenizer

        hf = AutoTokenizer.from_pretrained(str(pathlib.Path(path).parent), gguf_file=pathlib.Path(path).name)
        backend, how = hf.backend_tokenizer, "AutoTokenizer.from_pretrained(gguf_file=...)"
    except Exception as error:  # noqa: BLE001 - any failure of the torch-bound reader
        backend, _ = convert_gguf_tokenizer(architecture, tokenizer_dict)
        how = f"convert_gguf_tokenizer (AutoTokenizer failed: {type(error).__name__}: {str(error)[:80]})"
    uncorrected = None
    if tokenizer_dict.get("pre_tokenizer_type") in DIGIT_SPLIT_PRE:
        from tokenizers import Tokenizer

        uncorrected = Tokenizer.from_str(backend.to_str())
        backend.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ])
        how += "; pre-tokenizer: Digits(individual) + ByteLevel as llama.cpp splits this pre type"
    return backend, config, how, uncorrected


def conversations(rng, count):
    texts = tokenizer_corpus.corpus(SEED + 1, 200)
    roles = ["user", "assistant"]
    out = []
    for i in range(count):
        messages = []
        if i % 3 == 0:
            messages.append({"role": "system", "content": rng.choice(texts)})
        for turn in range(rng.randint(1, 5)):
            messages.append({"role": roles[turn % 2], "content": rng.choice(texts + ["", "Hi!", "2+2=4"])})
        out.append(messages)
    return out


def main():
    gguf_path = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf")
    out_path = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else (
        ROOT / "tests" / "fixtures" / "gguf" / "smollm2_tokenizer.json")
    tok, config, how, uncorrected = build(gguf_path)
    print("built with", how)

    texts = tokenizer_corpus.corpus(SEED, CORPUS_SIZE) + tokenizer_corpus.SPECIAL_TEXT + [
        "", " ", "<|im_start|>user\nHi<|im_end|>", "<|endoftext|><|endoftext|>", "12345 678.9", "a<|im_end|>b",
    ]
    ids, decodes, differ = [], [], 0
    for text in texts:
        plain = tok.encode(text, add_special_tokens=False).ids
        added = tok.encode(text, add_special_tokens=True).ids
        ids.append([plain] if plain == added else [plain, added])
        both = [tok.decode(added, skip_special_tokens=False), tok.decode(added, skip_special_tokens=True)]
        decodes.append([None if d == text else d for d in both])
        if uncorrected is not None and uncorrected.encode(text, add_special_tokens=False).ids != plain:
            differ += 1
    if uncorrected is not None:
        print(f"the uncorrected converter tokenizes {differ} of {len(texts)} strings differently")

    env = reference_environment()
    template = env.from_string(config["chat_template"])
    chats = []
    for messages in conversations(random.Random(SEED), CONVERSATIONS):
        renders = [template.render(messages=messages, add_generation_prompt=gen, bos_token=config["bos_token"],
                                   eos_token=config["eos_token"]) for gen in (False, True)]
        chats.append({"messages": messages, "renders": renders})

    record = {
        "source": pathlib.Path(gguf_path).name,
        "built_with": how,
        "bos_token": config["bos_token"], "eos_token": config["eos_token"],
        "add_bos_token": config.get("add_bos_token"), "add_eos_token": config.get("add_eos_token"),
        "texts": texts, "ids": ids, "decodes": decodes, "chats": chats,
    }
    out_path.write_text(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{out_path}: {len(texts)} strings, {len(chats)} conversations")


if __name__ == "__main__":
    main()
