#!/usr/bin/env python3
"""tests/python/test_tokenizer_differential.py — fullgraph's tokenizer against Hugging Face `tokenizers`.

For the Llama-2, Llama-3.1 and Qwen3 fixtures, plus variants built from them that exercise
added-token flags (lstrip, rstrip, single_word, normalized), NFD, Metaspace (Mistral style) and
ByteLevel's own GPT-2 split, this runs a seeded corpus of >= 10,000 mixed-script strings (see tokenizer_corpus.py)
and a sweep of every code point of planes 0-3 through `fullgraph tokenize` (one process per mode)
and through the Python package, and requires identical results:
  - ids without and with special tokens (--with-special);
  - decode of the ids with special tokens, keeping them and skipping them (--skip-special);
  - decode of random id sequences (stray byte tokens, specials, ids past the vocabulary).
On a mismatch it prints the first few differing inputs (repr) and exits 1.

Environment: FULLGRAPH_BINARY (the built `fullgraph`), FULLGRAPH_TESTDATA (the fixtures folder).
Needs `pip install tokenizers==0.23.2` (the version the fixtures were made with).
"""
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tokenizer_corpus  # noqa: E402

try:
    import tokenizers
except ImportError:
    print("FAIL: the Python package `tokenizers` is missing: pip install tokenizers==0.23.2")
    sys.exit(1)

SEED = 20261130
CORPUS_SIZE = 10000
RANDOM_ID_LISTS = 2000
SHOW = 5


def run_binary(binary, tokenizer_path, args, lines):
    cmd = [binary, "tokenize", "--tokenizer", tokenizer_path] + args
    proc = subprocess.run(cmd, input="".join(line + "\n" for line in lines).encode("utf-8"),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        print(f"FAIL: {' '.join(cmd)} exited with {proc.returncode}: {proc.stderr.decode('utf-8', 'replace')}")
        sys.exit(1)
    out = proc.stdout.decode("utf-8").split("\n")
    if out and out[-1] == "":
        out.pop()
    if len(out) != len(lines):
        print(f"FAIL: {' '.join(cmd)} wrote {len(out)} lines for {len(lines)} inputs")
        sys.exit(1)
    return [json.loads(line) for line in out]


def clip(value, around=None, width=160):
    """repr of value, cut to about `width` characters around index `around`."""
    if around is None or len(value) <= width:
        text = repr(value)
        return text if len(text) <= 2 * width else text[:2 * width] + " ..."
    lo = max(0, around - width // 4)
    return f"[{lo}:] " + repr(value[lo:lo + width // 2]) + " ..."


def compare(label, inputs, ours, theirs):
    bad = [i for i in range(len(inputs)) if ours[i] != theirs[i]]
    if not bad:
        print(f"  {label}: {len(inputs)} identical")
        return True
    print(f"  {label}: {len(bad)} of {len(inputs)} differ; first {min(SHOW, len(bad))}:")
    for i in bad[:SHOW]:
        a, b = ours[i], theirs[i]
        first = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
        print(f"    input  {clip(inputs[i])}\n    ours   {clip(a, first)}\n    python {clip(b, first)}")
    return False


def unicode_sweep():
    """Every code point of planes 0-3 (no surrogates) in several contexts, 64 per string."""
    cps = [c for c in range(0x20, 0x323B0) if not 0xD800 <= c <= 0xDFFF]
    out = []
    for i in range(0, len(cps), 64):
        out.append("".join(f"a{chr(c)}!{chr(c)}{chr(c)}1 {chr(c)}x\n" for c in cps[i:i + 64]))
    # Canonical compositions and decompositions, including U+11938 (new in Unicode 13).
    out += ["\U00011935\U00011930 \U00011938\u0301 e\u0301\u0323 \u1e0a\u0323 \u0d4a \u0d46\u0d3e",
            "\u1100\u1161\u11a8 \u2126 \u212b \u0958 \ufb2c \U0001d15e \u0344"]
    return out


def variants(testdata, workdir):
    """(name, path) of the fixture tokenizers and of derived ones that cover more options."""
    base = os.path.join(testdata, "tokenizers")
    out = [(n, os.path.join(base, n, "tokenizer.json")) for n in ("llama2", "llama3_1", "qwen3")]

    def derive(name, source, change):
        with open(os.path.join(base, source, "tokenizer.json"), encoding="utf-8") as f:
            j = json.load(f)
        change(j)
        path = os.path.join(workdir, name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(j, f, ensure_ascii=False)
        out.append((name, path))

    def add_tokens(j, tokens):
        vocab = j["model"]["vocab"]
        next_id = len(vocab) + sum(1 for t in j["added_tokens"] if t["content"] not in vocab)
        for content, flags in tokens:
            if content in vocab:
                tid = vocab[content]
            else:
                tid, next_id = next_id, next_id + 1
            entry = {"id": tid, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
                     "normalized": False, "special": False}
            entry.update(flags)
            j["added_tokens"].append(entry)

    derive("qwen3_flags", "qwen3", lambda j: add_tokens(j, [
        ("<mask>", {"lstrip": True, "rstrip": True, "special": True}),
        ("hello", {"single_word": True, "normalized": True}),
        (" world", {"rstrip": True}),
        ("cafe\u0301", {"normalized": True}),
        ("<|im_st", {"single_word": True, "special": True}),
        ("Spe\u0301cial", {"normalized": True, "special": True}),
    ]))
    derive("llama2_flags", "llama2", lambda j: add_tokens(j, [
        ("foo bar", {"normalized": True}),
        ("[INST]", {"lstrip": True, "rstrip": True, "special": True}),
        ("ab", {"single_word": True}),
        ("sp tok", {"normalized": True, "special": True}),
    ]))

    def nfd(j):
        j["normalizer"] = {"type": "NFD"}
    derive("qwen3_nfd", "qwen3", nfd)

    def metaspace(scheme, split):
        def change(j):
            j["normalizer"] = None
            j["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": scheme,
                                  "split": split}
            j["decoder"] = {"type": "Sequence", "decoders": [
                {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": scheme, "split": split},
                {"type": "ByteFallback"}, {"type": "Fuse"}]}
        return change
    derive("llama2_metaspace_first", "llama2", metaspace("first", False))
    derive("llama2_metaspace_always_split", "llama2", metaspace("always", True))

    def gpt2_split(j):
        j["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                              "use_regex": True}
    derive("llama3_gpt2_split", "llama3_1", gpt2_split)
    return out


def check_tokenizer(binary, name, path, texts, rng):
    """Compares all modes on `texts`; True when everything is identical."""
    print(f"{name}: {path}")
    tk = tokenizers.Tokenizer.from_file(path)
    ok = True
    theirs_plain = [e.ids for e in tk.encode_batch(texts, add_special_tokens=False)]
    theirs_special = [e.ids for e in tk.encode_batch(texts, add_special_tokens=True)]
    lines = [json.dumps(t, ensure_ascii=False) for t in texts]
    ok &= compare("encode", texts, run_binary(binary, path, [], lines), theirs_plain)
    ok &= compare("encode --with-special", texts, run_binary(binary, path, ["--with-special"], lines), theirs_special)

    vocab = tk.get_vocab_size(with_added_tokens=True)
    specials = sorted(tk.get_added_tokens_decoder().keys())
    id_lists = list(theirs_special)
    for _ in range(RANDOM_ID_LISTS):
        n = rng.randint(0, 24)
        ids = []
        for _ in range(n):
            r = rng.random()
            if r < 0.3 and vocab > 300:
                ids.append(rng.randint(0, 300))  # byte tokens of Llama-2, single bytes of byte-level vocabularies
            elif r < 0.4 and specials:
                ids.append(rng.choice(specials))
            elif r < 0.42:
                ids.append(vocab + rng.randint(0, 10))  # no token: skipped by both
            else:
                ids.append(rng.randint(0, vocab - 1))
        id_lists.append(ids)
    id_lines = [json.dumps(ids) for ids in id_lists]
    for skip, args in ((False, ["--decode"]), (True, ["--decode", "--skip-special"])):
        theirs = tk.decode_batch(id_lists, skip_special_tokens=skip)
        ok &= compare(f"decode skip_special={skip}", id_lists, run_binary(binary, path, args, id_lines), theirs)
    return ok


def main():
    binary = os.environ.get("FULLGRAPH_BINARY")
    testdata = os.environ.get("FULLGRAPH_TESTDATA")
    if not binary or not testdata:
        print("FAIL: set FULLGRAPH_BINARY and FULLGRAPH_TESTDATA")
        return 1
    if tokenizers.__version__ != "0.23.2":
        print(f"note: tokenizers {tokenizers.__version__} installed; the fixtures were made with 0.23.2")
    corpus = tokenizer_corpus.corpus(SEED, CORPUS_SIZE)
    sweep = unicode_sweep()
    print(f"corpus: {len(corpus)} random strings; code point sweep: {len(sweep)} strings")
    rng = random.Random(SEED)
    ok = True
    with tempfile.TemporaryDirectory() as workdir:
        for name, path in variants(testdata, workdir):
            # The sweep tests Unicode tables (regex classes, normalization), which the added-token
            # variants share with their base tokenizer.
            texts = corpus if name.endswith("_flags") else corpus + sweep
            ok &= check_tokenizer(binary, name, path, texts, rng)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
