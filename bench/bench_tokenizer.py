#!/usr/bin/env python3
"""bench/bench_tokenizer.py — encoding throughput: fullgraph's tokenizer vs Hugging Face `tokenizers`.

Builds >= 10 MB of mixed text in the style of the differential test's corpus (one document of about
2,000 characters per line; see tests/python/tokenizer_corpus.py), then for each fixture tokenizer:
  - ours:   `fullgraph tokenize --tokenizer T --bench FILE --bench-repeat N` (in-process timing,
            each line encoded with encode(line, add_special_tokens=false), one thread);
  - Python: Tokenizer.encode(line, add_special_tokens=False) in a plain loop over the same lines,
            one thread (RAYON_NUM_THREADS=1 and TOKENIZERS_PARALLELISM=false are set as well).
Both report MB/s (10^6 bytes of UTF-8 input per second) for each pass; pass 1 starts with a cold
BPE cache, later passes reuse it.

Usage: bench_tokenizer.py --binary build/fullgraph [--testdata ../shared/testdata] [--mb 10]
                          [--passes 2] [--results bench/RESULTS.md --machine "..."]
"""
import argparse
import datetime
import os
import random
import re
import subprocess
import sys
import tempfile
import time

os.environ["RAYON_NUM_THREADS"] = "1"  # before tokenizers starts its thread pool
os.environ["TOKENIZERS_PARALLELISM"] = "false"

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
import tokenizer_corpus  # noqa: E402
import tokenizers  # noqa: E402

TOKENIZERS = ["llama2", "llama3_1", "qwen3"]


def build_text(megabytes, seed=7):
    rng = random.Random(seed)
    lines, size = [], 0
    while size < megabytes * 1_000_000:
        line = tokenizer_corpus.document(rng, 2000) + "\n"
        lines.append(line)
        size += len(line.encode("utf-8"))
    return "".join(lines)


def bench_ours(binary, tokenizer_path, text_path, passes):
    out = subprocess.run([binary, "tokenize", "--tokenizer", tokenizer_path, "--bench", text_path,
                          "--bench-repeat", str(passes)], check=True, capture_output=True, text=True).stdout
    return [float(m) for m in re.findall(r"([0-9.]+) MB/s", out)], out.strip()


def bench_python(tokenizer_path, lines, nbytes, passes):
    tk = tokenizers.Tokenizer.from_file(tokenizer_path)
    rates = []
    for _ in range(passes):
        start = time.perf_counter()
        for line in lines:
            tk.encode(line, add_special_tokens=False)
        rates.append(nbytes / 1e6 / (time.perf_counter() - start))
    return rates


def git_revision():
    try:
        rev = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        head = rev.stdout.strip() if rev.returncode == 0 else ""
        dirty = subprocess.run(["git", "-C", HERE, "status", "--porcelain"], capture_output=True, text=True).stdout
        if not head:
            return "uncommitted (no commit yet)"
        return f"uncommitted on top of {head}" if dirty.strip() else head
    except OSError:
        return "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.environ.get("FULLGRAPH_BINARY", "build/fullgraph"))
    ap.add_argument("--testdata", default=os.environ.get("FULLGRAPH_TESTDATA", os.path.join(HERE, "..", "..",
                                                                                             "shared", "testdata")))
    ap.add_argument("--mb", type=float, default=10.0)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--results", help="append a section with the numbers to this markdown file")
    ap.add_argument("--machine", default="unspecified machine")
    a = ap.parse_args()

    text = build_text(a.mb)
    nbytes = len(text.encode("utf-8"))
    # Split at "\n" only, as `fullgraph tokenize --bench` does (str.splitlines also splits at \x1c, U+2028...).
    lines = [line + "\n" for line in text.split("\n")[:-1]]
    assert "".join(lines) == text
    rows = []
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "bench.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"text: {nbytes} bytes, {len(lines)} lines; tokenizers {tokenizers.__version__}, one thread each")
        for name in TOKENIZERS:
            tok = os.path.join(a.testdata, "tokenizers", name, "tokenizer.json")
            ours, _ = bench_ours(a.binary, tok, path, a.passes)
            theirs = bench_python(tok, lines, nbytes, a.passes)
            rows.append((name, ours, theirs))
            print(f"{name:9s} ours " + " / ".join(f"{r:7.2f}" for r in ours) + " MB/s   python " +
                  " / ".join(f"{r:7.2f}" for r in theirs) + f" MB/s   (passes 1..{a.passes})")
    if a.results:
        write_results(a, rows, nbytes, len(lines))


def write_results(a, rows, nbytes, nlines):
    """Adds a section to the results file, newest first (before the first existing "## " section)."""
    section = [f"## {datetime.date.today().isoformat()} — tokenizer encode throughput vs Hugging Face `tokenizers`",
               "",
               f"- Commit: {git_revision()}. Machine: {a.machine}.",
               f"- Command: `python3 bench/bench_tokenizer.py --binary {a.binary} --mb {a.mb:g} --passes {a.passes}`.",
               f"- Input: {nbytes / 1e6:.1f} MB of mixed-script text in the style of tests/python/tokenizer_corpus.py, "
               f"{nlines} lines of ~2,000 characters, each line encoded without special tokens.",
               f"- Peer: Python `tokenizers` {tokenizers.__version__}, `Tokenizer.encode` in a plain loop over the same "
               "lines, one thread (RAYON_NUM_THREADS=1). Ours: `fullgraph tokenize --bench`, one thread.",
               "- MB/s = 10^6 input bytes per second; pass 1 starts with a cold BPE cache. Target (issue): at least "
               "the peer's single-thread speed.",
               "",
               "| tokenizer | fullgraph pass 1 | fullgraph pass 2 | Python pass 1 | Python pass 2 | ours / Python (pass 2) |",
               "|---|---|---|---|---|---|"]
    for name, ours, theirs in rows:
        section.append(f"| {name} | {ours[0]:.2f} | {ours[-1]:.2f} | {theirs[0]:.2f} | {theirs[-1]:.2f} | "
                       f"{ours[-1] / theirs[-1]:.2f}x |")
    text = "\n".join(section) + "\n"
    existing = open(a.results, encoding="utf-8").read() if os.path.exists(a.results) else \
        "# fullgraph benchmark results\n"
    at = existing.find("\n## ")
    if at < 0:
        updated = existing.rstrip("\n") + "\n\n" + text
    else:
        updated = existing[:at + 1] + text + "\n" + existing[at + 1:]
    with open(a.results, "w", encoding="utf-8") as f:
        f.write(updated)

if __name__ == "__main__":
    main()
