#!/usr/bin/env python3
"""Encodes text, or decodes ids, with the byte-level BPE vocabulary stored in a GGUF file
(tokenizer.ggml.model "gpt2": tokenizer.ggml.tokens and tokenizer.ggml.merges), through the
Hugging Face `tokenizers` package: an outside tokenizer for the token ids that
tests/test_gguf_load_smollm2.cpp feeds SmolLM2-135M-Instruct, and for reading its continuation.

The pre-tokenizer is GPT-2's byte-level split with digits split one by one, which is what
llama.cpp's "smollm" pre-tokenizer does; it is exact for plain English prompts.

  python3 scripts/gguf/gguf_vocab_tokenize.py models/SmolLM2-135M-Instruct.Q4_1.gguf encode "The capital of France is"
  python3 scripts/gguf/gguf_vocab_tokenize.py models/SmolLM2-135M-Instruct.Q4_1.gguf decode 504 3575 282 4649 314
"""
import sys

from gguf import GGUFReader
from tokenizers import Tokenizer, decoders, models, pre_tokenizers


def field_strings(reader: GGUFReader, key: str) -> list[str]:
    field = reader.fields[key]
    return [bytes(field.parts[i]).decode("utf-8") for i in field.data]


def load(path: str) -> Tokenizer:
    reader = GGUFReader(path)
    model = bytes(reader.fields["tokenizer.ggml.model"].parts[-1]).decode()
    if model != "gpt2":
        sys.exit(f"{path}: tokenizer.ggml.model is {model!r}; this script reads byte-level BPE (gpt2) only")
    tokens = field_strings(reader, "tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in field_strings(reader, "tokenizer.ggml.merges")]
    tok = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, merges))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)])
    tok.decoder = decoders.ByteLevel()
    return tok


def main() -> None:
    path, mode, *rest = sys.argv[1:]
    tok = load(path)
    if mode == "encode":
        print(" ".join(str(i) for i in tok.encode(" ".join(rest), add_special_tokens=False).ids))
    else:
        print(repr(tok.decode([int(i) for i in rest], skip_special_tokens=False)))


if __name__ == "__main__":
    main()
