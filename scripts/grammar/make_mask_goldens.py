#!/usr/bin/env python3
"""Makes the goldens of the grammar differential test (tests/test_grammar_differential.cpp): the
token masks that xgrammar's own Python package computes for random JSON schemas after random
valid prefixes, on the three fixture tokenizers, for our xgrammar integration (src/grammar/) to
match bit for bit. Run once by hand and commit its output; CI never runs it.

    pip install xgrammar==0.1.27 transformers      # not part of CI's install; PyTorch not needed
    python3 scripts/grammar/make_mask_goldens.py [--testdata DIR] [--out DIR] [--schemas N] [--seed S]

What both sides are given, mirrored from src/grammar/grammar_compiler.cpp and grammar_matcher.cpp:
- Tokenizer: TokenizerInfo.from_huggingface(AutoTokenizer of the fixture folder) with vocab_size =
  the model's logits width (Qwen3: 151936; the others: their tokenizer's size) and stop_token_ids =
  the EOS ids of tests/grammar_test_support.h's fixture_eos_ids (every one of EOS_TOKENS present).
- Compiler: GrammarCompiler(max_threads=2, cache_enabled=False); the thread count changes no mask.
- compile_json_schema(text, any_whitespace=<the case's>, indent=None, separators=None,
  strict_mode=True, max_whitespace_cnt=None): xgrammar's defaults, which our CompileJSONSchema
  call leaves in place (only any_whitespace is passed; each schema draws it, True two times in three).
- GrammarMatcher(override_stop_tokens=None, terminate_without_stop_token=False,
  max_rollback_tokens=-1).

The vocabularies differ in one known way, which the goldens state rather than hide: ours gives
special tokens (added_tokens with special=true in tokenizer.json) no bytes, so they are never
allowed, while from_huggingface gives them their literal text ("<|eot_id|>"), which a JSON string
may hold. Those ids, the EOS ids excepted, are cleared from every mask here; each golden file's
header lists them and counts the set bits cleared, and the C++ test checks that ours never allows
them. The header also holds an FNV-1a hash of the bytes xgrammar holds for every other id (in all
and per block of ids), which the C++ test recomputes from our GrammarVocabulary. Those bytes are
TokenizerInfo.decoded_vocab's, except for the token of the byte 0x00, which decoded_vocab shows
as b"" (its binding cuts each entry at a NUL) and which the script establishes through the
matcher instead (see Vocabulary.nul_ids); the header lists those ids.

Output (tests/fixtures/grammar_masks/): schemas.jsonl, one line per schema {"index",
"any_whitespace", "schema" (the exact text both compile)}; and per tokenizer NAME.jsonl, a header
line then one line per case {"schema", "prefix" (token ids), "masks" ([hex FNV-1a-64, popcount] of
the mask before each prefix token and after the last), and in one case of FULL_EVERY "full":
{"position", "ranges" ([first, last] allowed ids)}}. A mask's hash runs over its int32 words,
ceil(vocab / 32) of them, as little-endian bytes, the bits past the vocabulary clear.
"""
import argparse
import array
import importlib.metadata
import importlib.util
import json
import re
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def import_xgrammar():
    """xgrammar imports PyTorch when it loads; bench/grammar/xgrammar_python.py puts a stand-in
    `torch` on the path where it is not installed (no mask kernel of it is used here: masks are
    filled into a plain int32 buffer). Loading that script loads xgrammar through it."""
    spec = importlib.util.spec_from_file_location("xgrammar_python",
                                                  os.path.join(ROOT, "bench", "grammar", "xgrammar_python.py"))
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    import xgrammar  # pylint: disable=import-outside-toplevel
    return xgrammar


def pinned_xgrammar_version():
    """The version whose C++ core fullgraph builds (cmake/xgrammar.cmake): the goldens are only
    worth comparing with the same version's package."""
    with open(os.path.join(ROOT, "cmake", "xgrammar.cmake"), encoding="utf-8") as f:
        return re.search(r"set\(FG_XGRAMMAR_VERSION (\S+)\)", f.read()).group(1)


sys.path.insert(0, HERE)
from json_schemas import make_schemas  # noqa: E402
xgr = import_xgrammar()
from transformers import AutoTokenizer  # noqa: E402

TOKENIZERS = ["llama2", "llama3_1", "qwen3"]
MODEL_VOCAB = {"qwen3": 151936}  # the logits width where it exceeds the tokenizer's (fixture_model_vocab)
EOS_TOKENS = ["</s>", "<|end_of_text|>", "<|eot_id|>", "<|im_end|>", "<|endoftext|>"]  # fixture_eos_ids
COMPILER_THREADS = 2
FULL_EVERY = 20  # one case in FULL_EVERY keeps one of its masks in full
VOCAB_BLOCK = 8192  # ids per partial hash of the vocabulary
BLANK_ODDS = 4  # where other tokens are allowed too, a whitespace-only token is drawn 1 time in BLANK_ODDS
FNV_OFFSET, FNV_PRIME, U64 = 0xcbf29ce484222325, 0x100000001b3, (1 << 64) - 1


def fnv1a(data, h=FNV_OFFSET):
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & U64
    return h


def id_ranges(ids):
    """Sorted ids as [first, last] runs."""
    ranges = []
    for i in ids:
        if ranges and ranges[-1][1] == i - 1:
            ranges[-1][1] = i
        else:
            ranges.append([i, i])
    return ranges


class Vocabulary:
    """A fixture tokenizer as xgrammar's Python package sees it, plus what tokenizer.json says is
    special."""

    def __init__(self, testdata, name):
        folder = os.path.join(testdata, "tokenizers", name)
        tokenizer = AutoTokenizer.from_pretrained(folder)
        vocab = tokenizer.get_vocab()
        self.encoded = vocab
        self.encoded_by_id = {i: t for t, i in vocab.items()}
        self.name = name
        self.size = MODEL_VOCAB.get(name, max(len(vocab), max(vocab.values()) + 1))
        self.stop_ids = sorted({vocab[t] for t in EOS_TOKENS if t in vocab})
        self.info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=self.size, stop_token_ids=self.stop_ids)
        with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
            added = json.load(f)["added_tokens"]
        self.special_ids = sorted(t["id"] for t in added if t["special"] and t["id"] < self.size)
        # What ours never allows and xgrammar's package may: special ids that are not stop ids.
        self.cleared_ids = [i for i in self.special_ids if i not in self.stop_ids]
        self.words = (self.size + 31) // 32
        self.blank_ids = {i for i, t in enumerate(self.info.decoded_vocab) if t and not t.strip(b" \t\n\r")}
        self.cleared_bits = 0
        self.cleared_seen = set()

    def nul_ids(self, compiler):
        """The ids whose bytes are the one byte 0x00. decoded_vocab cannot show them: the binding
        builds each entry as nanobind::bytes(token.c_str()), which ends at a NUL, so it reads b"".
        What xgrammar matches them as is asked of the matcher instead: a grammar of that one byte
        allows exactly them. Any other token holding a NUL would be lost the same way, and stops
        the script (none of the fixture tokenizers has one)."""
        nul_encoded = {xgr.VocabType.BYTE_LEVEL: "\u0100",
                       xgr.VocabType.BYTE_FALLBACK: "<0x00>"}.get(self.info.vocab_type)
        holding = sorted(i for t, i in self.encoded.items() if nul_encoded and nul_encoded in t and i < self.size)
        assert all(self.encoded_by_id[i] == nul_encoded for i in holding), \
            f"{self.name}: a token holds a NUL and more"
        matcher = xgr.GrammarMatcher(compiler.compile_grammar('root ::= "\\x00"'))
        allowed = allowed_ids(self.read_mask(matcher, count=False))
        assert allowed == holding, f"{self.name}: the one-byte NUL grammar allows {allowed}, not {holding}"
        return holding

    def vocabulary_hash(self, nul_ids):
        """FNV-1a-64 over (id: int32 LE, length: uint32 LE, bytes) of every non-special id in
        order, over all of them and over each block of VOCAB_BLOCK ids (so that a mismatch says
        where), and how many there are: what the C++ test recomputes from our vocabulary."""
        special = set(self.special_ids)
        decoded = self.info.decoded_vocab
        h, count, blocks = FNV_OFFSET, 0, []
        for i in range(self.size):
            if i % VOCAB_BLOCK == 0:
                blocks.append(FNV_OFFSET)
            if i in special:
                continue
            token = b"\x00" if i in nul_ids else decoded[i]
            record = i.to_bytes(4, "little") + len(token).to_bytes(4, "little") + token
            h, blocks[-1] = fnv1a(record, h), fnv1a(record, blocks[-1])
            count += 1
        return {"non_special_tokens": count, "fnv1a64": f"{h:016x}", "block_ids": VOCAB_BLOCK,
                "block_fnv1a64": [f"{b:016x}" for b in blocks], "nul_ids": nul_ids}

    def read_mask(self, matcher, count=True):
        """The next-token mask as uint32 words, the special non-stop ids cleared (and counted)."""
        buf = array.array("i", [0] * self.words)
        matcher.fill_next_token_bitmask(memoryview(buf))
        words = array.array("I", buf.tobytes())
        tail = self.words * 32 - self.size
        if tail:
            assert words[-1] >> (32 - tail) == 0, f"{self.name}: xgrammar set bits past the vocabulary"
        for i in self.cleared_ids:
            if words[i >> 5] >> (i & 31) & 1:
                words[i >> 5] &= ~(1 << (i & 31)) & 0xFFFFFFFF
                if count:
                    self.cleared_bits += 1
                    self.cleared_seen.add(i)
        return words


def allowed_ids(words):
    ids = []
    for w, word in enumerate(words):
        while word:
            low = word & -word
            ids.append(w * 32 + low.bit_length() - 1)
            word ^= low
    return ids


def mask_digest(words):
    data = words.tobytes() if sys.byteorder == "little" else b"".join(x.to_bytes(4, "little") for x in words)
    return [f"{fnv1a(data):016x}", sum(x.bit_count() for x in words)]


def draw_from(choices, blank_ids, rng):
    """The ids the next token is drawn from, uniformly: all the allowed non-stop ids, except that
    where any whitespace is allowed the whitespace-only tokens (hundreds in a byte-level
    vocabulary, against the few that go on with the document) are drawn from one time in
    BLANK_ODDS only, so that a walk does not spend its whole length between two JSON tokens."""
    blank = [i for i in choices if i in blank_ids]
    if not blank or len(blank) == len(choices) or rng.randrange(BLANK_ODDS) == 0:
        return choices
    return [i for i in choices if i not in blank_ids]


def walk(vocab, compiled, rng, full):
    """A random valid prefix (each token drawn uniformly among the allowed non-stop ids, as
    draw_from says) and the mask at every position; stops at its drawn length or where only stop
    ids are allowed."""
    matcher = xgr.GrammarMatcher(compiled, override_stop_tokens=None, terminate_without_stop_token=False,
                                 max_rollback_tokens=-1)
    length = rng.randint(16, 24)
    full_at = rng.randint(0, length) if full else -1
    prefix, masks, kept = [], [], None
    stops = set(vocab.stop_ids)
    while True:
        words = vocab.read_mask(matcher)
        masks.append(mask_digest(words))
        ids = allowed_ids(words)
        if len(masks) - 1 <= full_at:  # the drawn position, or the last where the walk ends before it
            kept = {"position": len(masks) - 1, "ranges": id_ranges(ids)}
        choices = [i for i in ids if i not in stops]
        if len(prefix) == length or not choices:
            break
        token = rng.choice(draw_from(choices, vocab.blank_ids, rng))
        assert matcher.accept_token(token), f"{vocab.name}: xgrammar refused {token}, which its mask allowed"
        prefix.append(token)
    return prefix, masks, kept


def header(vocab, compiler, schemas):
    return {
        "tokenizer": vocab.name, "xgrammar": importlib.metadata.version("xgrammar"),
        "vocab_size": vocab.size, "stop_token_ids": vocab.stop_ids,
        "compile": {"max_threads": COMPILER_THREADS, "cache_enabled": False, "indent": None, "separators": None,
                    "strict_mode": True, "max_whitespace_cnt": None, "any_whitespace": "per schema"},
        "special_ids": id_ranges(vocab.special_ids),
        "cleared_ids": id_ranges(vocab.cleared_ids),
        "cleared_bits": vocab.cleared_bits, "cleared_ids_seen_set": len(vocab.cleared_seen),
        "vocabulary": vocab.vocabulary_hash(vocab.nul_ids(compiler)),
        "schemas": len(schemas),
    }


def make_tokenizer_goldens(testdata, name, schemas, seed):
    start = time.time()
    vocab = Vocabulary(testdata, name)
    compiler = xgr.GrammarCompiler(vocab.info, max_threads=COMPILER_THREADS, cache_enabled=False)
    rng = random.Random(f"{seed}/{name}")
    cases, positions = [], 0
    for index, (text, any_whitespace) in enumerate(schemas):
        compiled = compiler.compile_json_schema(text, any_whitespace=any_whitespace, indent=None, separators=None,
                                                strict_mode=True, max_whitespace_cnt=None)
        prefix, masks, full = walk(vocab, compiled, rng, full=index % FULL_EVERY == 0)
        case = {"schema": index, "prefix": prefix, "masks": masks}
        if full:
            case["full"] = full
        cases.append(case)
        positions += len(masks)
    lines = [header(vocab, compiler, schemas)] + cases
    distinct = len({digest[0] for case in cases for digest in case["masks"]})
    print(f"{name}: {len(cases)} cases, {positions} masks ({distinct} distinct), {vocab.cleared_bits} special "
          f"bits cleared ({len(vocab.cleared_seen)} ids), {time.time() - start:.0f} s", flush=True)
    return lines


def write_jsonl(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--testdata", default=os.environ.get("FULLGRAPH_TESTDATA",
                                                             os.path.join(os.path.dirname(ROOT), "shared", "testdata")))
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "grammar_masks"))
    parser.add_argument("--schemas", type=int, default=240)
    parser.add_argument("--seed", type=int, default=30)
    args = parser.parse_args()
    installed, pinned = importlib.metadata.version("xgrammar"), pinned_xgrammar_version()
    if installed != pinned:
        sys.exit(f"xgrammar {installed} is installed; fullgraph builds {pinned}: pip install xgrammar=={pinned}")
    start = time.time()
    rng = random.Random(f"{args.seed}/any_whitespace")
    schemas = [(text, rng.random() < 2 / 3) for text in make_schemas(args.seed, args.schemas)]
    os.makedirs(args.out, exist_ok=True)
    write_jsonl(os.path.join(args.out, "schemas.jsonl"),
                [{"index": i, "any_whitespace": aw, "schema": text} for i, (text, aw) in enumerate(schemas)])
    for name in TOKENIZERS:
        write_jsonl(os.path.join(args.out, name + ".jsonl"), make_tokenizer_goldens(args.testdata, name, schemas,
                                                                                   args.seed))
    print(f"done in {time.time() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
