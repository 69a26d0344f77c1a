#!/usr/bin/env python3
"""Fails when a file under src/ includes a layer above its own (DESIGN.md, "Layers and data flow").

The layers, from the top: cli > server > engine > runner > model > backend > attention > core.
tokenizer/ and sampling/ sit just above core and may include core alone; grammar/ (structured
outputs on xgrammar) sits above tokenizer/ and may include core/ and tokenizer/ alone. A folder's cuda/
subfolder belongs to the folder's layer (core/cuda is core). Benchmarks live in bench/, outside
src/, on top of everything: only src/cli/main.cpp includes them, to register `fullgraph bench`.

Usage: check_layers.py [SRC_DIR]   (default: the src/ beside this script's folder)
Prints one line per upward include and exits 1, or prints a summary and exits 0.
"""
import pathlib
import re
import sys

ORDER = ["core", "tokenizer", "sampling", "grammar", "attention", "backend", "model", "runner", "engine", "server", "cli"]
RANK = {"core": 0, "tokenizer": 1, "sampling": 1, "grammar": 2, "attention": 2, "backend": 3, "model": 4,
        "runner": 5, "engine": 6, "server": 7, "cli": 8}
# Layers beside the chain, with the only layers they may include.
LEAVES = {"tokenizer": {"core"}, "sampling": {"core"}, "grammar": {"core", "tokenizer"}}
BENCH_ENTRY = "cli/main.cpp"        # the one file of src/ that may include bench/
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def allowed(own: str, target: str, rel: str) -> str | None:
    """None if a file of layer `own` (at src/`rel`) may include "target/...", else why not."""
    if target == own:
        return None
    if target == "bench":
        return None if rel == BENCH_ENTRY else "only src/cli/main.cpp includes bench/"
    if target not in RANK:
        return f"'{target}/' is not a layer of src/"
    if own in LEAVES:
        deps = LEAVES[own]
        return None if target in deps else f"{own}/ depends on {'/ and '.join(sorted(deps))}/ only"
    if RANK[target] >= RANK[own]:
        return f"{target}/ is not below {own}/"
    return None


def main() -> int:
    src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent / "src")
    problems, files, strangers = [], 0, set()
    for path in sorted(src.rglob("*")):
        if path.suffix not in {".h", ".cpp", ".cu", ".cuh"}:
            continue
        rel = path.relative_to(src).as_posix()
        own = rel.split("/")[0]
        if own not in RANK:
            if own not in strangers:
                strangers.add(own)
                problems.append(f"src/{own}/: not a layer of src/ (known: {', '.join(ORDER)})")
            continue
        files += 1
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match or "/" not in match.group(1):
                continue
            target = match.group(1).split("/")[0]
            why = allowed(own, target, rel)
            if why:
                problems.append(f"src/{rel}:{number}: #include \"{match.group(1)}\": {why}")
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} include(s) against the layer order "
              "cli > server > engine > runner > model > backend > attention > core (tokenizer, sampling: core only; "
              "grammar: core and tokenizer only)")
        return 1
    print(f"check_layers: {files} files under {src}, every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
