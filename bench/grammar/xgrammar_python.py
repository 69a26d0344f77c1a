#!/usr/bin/env python3
"""xgrammar's own Python package compiling a JSON schema for a tokenizer: the peer of
`fullgraph bench grammar` (same schema, same tokenizer, same vocabulary size and stop ids, the
same number of compiler threads, cold compiles).

    pip install xgrammar==0.1.27 transformers    # not part of CI's install
    python3 bench/grammar/xgrammar_python.py TOKENIZER_DIR SCHEMA VOCAB_SIZE EOS_IDS [THREADS]

xgrammar's package imports PyTorch when it loads, for its GPU mask kernels, which its compiler
does not use. Where PyTorch is not installed, this script puts a stand-in `torch` module on the
path that only satisfies that import.
"""
import importlib.util
import os
import sys
import tempfile
import time


def allow_import_without_torch():
    """Where PyTorch is not installed, puts on sys.path a `torch` module that only satisfies
    xgrammar's import of it: its compiler, all this script times, never calls into PyTorch."""
    if importlib.util.find_spec("torch") is not None:
        return
    folder = tempfile.mkdtemp()
    os.makedirs(os.path.join(folder, "torch"))
    with open(os.path.join(folder, "torch", "__init__.py"), "w") as f:
        f.write("class _Any:\n    def __getattr__(self, name): return _Any()\n    def __call__(self, *a, **k): return _Any()\n"
                "Tensor = type('Tensor', (), {})\nint32 = bool_ = float32 = _Any()\n"
                "def __getattr__(name): return _Any()\n")
    sys.path.insert(0, folder)


allow_import_without_torch()
import xgrammar as xgr  # noqa: E402
from transformers import PreTrainedTokenizerFast  # noqa: E402


def main():
    tokenizer_dir, schema_path, vocab, eos = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    threads = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(tokenizer_dir, "tokenizer.json"))
    start = time.time()
    info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=vocab, stop_token_ids=[int(x) for x in eos.split(",")])
    info_ms = (time.time() - start) * 1e3
    schema = open(schema_path).read()
    times = []
    for _ in range(3):
        compiler = xgr.GrammarCompiler(info, max_threads=threads, cache_enabled=False)
        start = time.time()
        compiler.compile_json_schema(schema, any_whitespace=True)
        times.append((time.time() - start) * 1e3)
    print(f"xgrammar python: tokenizer info {info_ms:.0f} ms; compile ({len(schema)} bytes, {threads} threads, cold, "
          f"3x): {', '.join(f'{t:.0f}' for t in times)} ms")


if __name__ == "__main__":
    main()
