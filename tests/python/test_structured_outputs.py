"""Constrained generation end to end: 1,000 requests with random constraints through
`fullgraph generate --prompts` on the two e2e fixture models (random weights, so nothing but the
grammar keeps their output in shape), sampled at temperature 1.0 on the CPU backend (on CUDA with
FULLGRAPH_DEVICE=cuda).

- Every constrained output that ends is valid: JSON schemas by `jsonschema`, regexes by
  re.fullmatch, choices by membership, EBNF grammars by a regular expression written beside
  each grammar that accepts the same language. None runs out of max_tokens.
- The same requests without their constraint are mostly invalid: the constraint did the work.

The constraints are drawn from seeded generators: JSON schemas with objects, arrays, enums,
bounded integers, string lengths and patterns, nested $defs references and anyOf; regexes of
classes, repetitions and alternations; choice lists; EBNF grammars with repetition and
alternation. Strings and repetitions are bounded, and JSON whitespace is off
(structured_outputs.disable_any_whitespace), so that a random model's walk through the grammar ends
within max_tokens.
"""
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

from serve_process import BINARY, check, failures, model_folder

REQUESTS = int(os.environ.get("STRUCTURED_REQUESTS", "1000"))
DEVICE = os.environ.get("FULLGRAPH_DEVICE", "cpu")  # the device run sets cuda
# A machine without the validators (the GPU machine) only generates, into RESULTS_OUT; another
# validates those outputs, read from RESULTS_IN, instead of generating its own.
RESULTS_OUT = os.environ.get("STRUCTURED_RESULTS_OUT")
RESULTS_IN = os.environ.get("STRUCTURED_RESULTS_IN")
UNCONSTRAINED = 100  # of them, run again without the constraint
MAX_TOKENS = 160
WORDS = ["alpha", "beta", "gamma", "red", "blue", "cat", "dog", "x", "yes", "no", "ok", "été", "数字"]


def leaf_schema(rng, defs):
    kind = rng.choice(["string", "enum", "pattern", "integer", "boolean", "null", "ref", "anyof", "array"])
    if kind == "string":
        lo = rng.randint(0, 2)
        return {"type": "string", "minLength": lo, "maxLength": lo + rng.randint(0, 6)}
    if kind == "enum":
        return {"enum": rng.sample(WORDS, rng.randint(1, 4))}
    if kind == "pattern":
        return {"type": "string", "pattern": rng.choice(["^[a-z]{1,5}$", "^[0-9]{2}-[0-9]{2}$", "^(on|off)$"])}
    if kind == "integer":
        lo = rng.randint(-50, 50)
        return {"type": "integer", "minimum": lo, "maximum": lo + rng.randint(0, 200)}
    if kind == "boolean":
        return {"type": "boolean"}
    if kind == "null":
        return {"type": "null"}
    if kind == "ref":
        name = f"d{len(defs)}"
        defs[name] = {"type": "object", "properties": {"k": {"type": "integer", "minimum": 0, "maximum": 9}},
                      "required": ["k"], "additionalProperties": False}
        return {"$ref": f"#/$defs/{name}"}
    if kind == "anyof":
        return {"anyOf": [{"type": "boolean"}, {"type": "integer", "minimum": 0, "maximum": 99}]}
    lo = rng.randint(0, 1)
    return {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}, "minItems": lo,
            "maxItems": lo + rng.randint(0, 3)}


def object_schema(rng, defs, depth):
    props = {}
    for i in range(rng.randint(1, 4)):
        props[f"p{i}"] = object_schema(rng, defs, depth + 1) if depth < 1 and rng.random() < 0.2 else leaf_schema(
            rng, defs)
    required = [k for k in props if rng.random() < 0.7]
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def json_case(rng):
    defs = {}
    schema = object_schema(rng, defs, 0)
    if defs:
        schema["$defs"] = defs

    def valid(text):
        import jsonschema  # pylint: disable=import-outside-toplevel (not needed where only generating)
        try:
            # strict=False: xgrammar (0.1.27) writes a length-bounded string as [^"\\\r\n]{m,n}, which
            # lets raw control characters (a tab) through where JSON wants them escaped; the
            # document is otherwise what the schema says.
            jsonschema.validate(json.loads(text, strict=False), schema)
            return True
        except (ValueError, jsonschema.ValidationError):
            return False
    return {"json": schema}, valid


def regex_case(rng):
    pieces = [rng.choice(["[a-z]{1,4}", "[0-9]{2,3}", "(cat|dog|bird)", "-", "[A-Z]?", "(ab)+?", "x{2}"])
              for _ in range(rng.randint(1, 4))]
    pattern = "".join(pieces).replace("+?", "{1,2}")
    return {"regex": pattern}, lambda text: re.fullmatch(pattern, text) is not None


def choice_case(rng):
    choices = rng.sample(WORDS, rng.randint(2, 5))
    return {"choice": choices}, lambda text: text in choices


def grammar_case(rng):
    word = rng.choice(["go", "stop", "wait"])
    grammars = [
        (f'root ::= "(" item ("," item){{0,2}} ")"\nitem ::= [a-z] [a-z]? | [0-9]',
         r"\((?:[a-z][a-z]?|[0-9])(?:,(?:[a-z][a-z]?|[0-9])){0,2}\)"),
        (f'root ::= "{word}" ("!" | "?" | "")', re.escape(word) + r"[!?]?"),
        ('root ::= pair (";" pair){0,1}\npair ::= [a-c] "=" [0-9]', r"[a-c]=[0-9](?:;[a-c]=[0-9])?"),
    ]
    grammar, regex = rng.choice(grammars)
    return {"grammar": grammar}, lambda text: re.fullmatch(regex, text) is not None


def cases(rng, count):
    makers = [json_case, json_case, regex_case, choice_case, grammar_case]  # JSON schemas: two in five
    return [makers[i % len(makers)](rng) for i in range(count)]


def run_generate(folder, lines, tmp, name):
    path = os.path.join(tmp, name + ".jsonl")
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(json.dumps(line) + "\n" for line in lines))
    proc = subprocess.run([BINARY, "generate", "--model", folder, "--device", DEVICE, "--rope-inv-freq-bf16", "--prompts", path,
                           "--max-num-seqs", "64", "--no-progress"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if proc.returncode != 0:
        sys.exit(f"generate --prompts ({name}) failed: " + proc.stderr.decode("utf-8", "replace")[-2000:])
    return [json.loads(l) for l in proc.stdout.decode("utf-8").split("\n") if l]  # not splitlines: texts hold U+2028


def check_model(tmp, e2e, tokenizer, seed, count):
    start = time.time()
    folder = model_folder(tmp, e2e, tokenizer)
    rng = random.Random(seed)
    drawn = cases(rng, count)
    lines = []
    for i, (constraint, _) in enumerate(drawn):
        lines.append({"prompt": rng.choice(["Answer:", "Data", "hi", "The output is"]), "max_tokens": MAX_TOKENS,
                      "temperature": 1.0, "seed": seed * 100000 + i,
                      "structured_outputs": dict(constraint, disable_any_whitespace=True)})
    free = [{k: v for k, v in line.items() if k != "structured_outputs"} for line in lines[:UNCONSTRAINED]]
    if RESULTS_IN:
        with open(os.path.join(RESULTS_IN, e2e + ".json")) as f:
            results = json.load(f)
    else:
        results = run_generate(folder, lines + free, tmp, e2e)
    if RESULTS_OUT:
        os.makedirs(RESULTS_OUT, exist_ok=True)
        with open(os.path.join(RESULTS_OUT, e2e + ".json"), "w") as f:
            json.dump(results, f)
        print(f"{e2e}: {len(results)} outputs written to {RESULTS_OUT} ({time.time() - start:.1f} s)", flush=True)
        return
    constrained, unconstrained = results[:count], results[count:]
    invalid, truncated = [], 0
    for i, (result, (constraint, valid)) in enumerate(zip(constrained, drawn)):
        if result["finish_reason"] != "stop":
            truncated += 1
        elif not valid(result["text"]):
            invalid.append((i, constraint, result["text"]))
    check(not invalid, f"{e2e}: {len(invalid)} of {count} constrained outputs do not validate, e.g. "
                       f"{str(invalid[:3])[:600]}")
    check(truncated == 0, f"{e2e}: {truncated} of {count} constrained outputs ran out of max_tokens")
    free_valid = sum(valid(r["text"]) for r, (_, valid) in zip(unconstrained, drawn))
    check(free_valid < UNCONSTRAINED // 4, f"{e2e}: without their constraints {free_valid} of {UNCONSTRAINED} outputs "
                                           "validate anyway; the test would not see a missing mask")
    kinds = {}
    for constraint, _ in drawn:
        kind = next(iter(constraint))
        kinds[kind] = kinds.get(kind, 0) + 1
    print(f"{e2e}: {count} constrained outputs ({kinds}): {count - len(invalid) - truncated} valid; without the "
          f"constraint {free_valid} of {UNCONSTRAINED} valid ({time.time() - start:.1f} s)", flush=True)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        half = REQUESTS // 2
        check_model(tmp, "tiny-llama2tok", "llama2", 1, half)
        check_model(tmp, "tiny-qwen3tok", "qwen3", 2, REQUESTS - half)
    print(f"{len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
