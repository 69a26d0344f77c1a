"""The built-in model's tokenizer (src/tokenizer/builtin_tokenizer_data.cpp) against the Python
`tokenizers` package on the same tokenizer.json: 3,000 random strings, ids with and without
special tokens and the decodes must be identical."""
import json
import os
import random
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tokenizer_corpus  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "..", "src", "tokenizer", "builtin_tokenizer_data.cpp")


def builtin_json():
    text = open(SOURCE, encoding="utf-8").read()
    return "".join(re.findall(r'R"fgjson\((.*?)\)fgjson"', text, flags=re.S))


def run(binary, path, args, lines):
    proc = subprocess.run([binary, "tokenize", "--tokenizer", path] + args,
                          input="".join(line + "\n" for line in lines).encode("utf-8"),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if proc.returncode != 0:
        sys.exit("fullgraph tokenize failed: " + proc.stderr.decode("utf-8", "replace"))
    # split on "\n" only: str.splitlines() would also split at U+2028 and friends inside the JSON
    return [json.loads(l) for l in proc.stdout.decode("utf-8").split("\n") if l]


def main():
    binary = os.environ["FULLGRAPH_BINARY"]
    spec = builtin_json()
    reference = Tokenizer.from_str(spec)
    assert reference.get_vocab_size(with_added_tokens=True) == 512
    texts = tokenizer_corpus.corpus(20261130, 3000)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tokenizer.json")
        open(path, "w", encoding="utf-8").write(spec)
        ours = run(binary, path, [], [json.dumps(t) for t in texts])
        ours_special = run(binary, path, ["--with-special"], [json.dumps(t) for t in texts])
        want = [reference.encode(t, add_special_tokens=False).ids for t in texts]
        want_special = [reference.encode(t, add_special_tokens=True).ids for t in texts]
        decoded = run(binary, path, ["--decode"], [json.dumps(ids) for ids in want])
        want_decoded = [reference.decode(ids, skip_special_tokens=False) for ids in want]
    bad = [(t, a, b) for t, a, b in zip(texts, ours, want) if a != b]
    bad += [(t, a, b) for t, a, b in zip(texts, ours_special, want_special) if a != b]
    bad += [(t, a, b) for t, a, b in zip(texts, decoded, want_decoded) if a != b]
    for t, a, b in bad[:5]:
        print("mismatch for", repr(t), "\n  ours  ", a, "\n  python", b)
    print(f"{len(texts)} strings x 3 modes: {len(bad)} mismatches")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
