"""Logprobs right at the byte level, end to end: `fullgraph serve` (the built-in model, whose
byte-level tokens often split characters; the e2e models with the Qwen3 byte-level BPE and the
Llama-2 SentencePiece byte-fallback tokenizers) and `fullgraph generate --prompts`.

- Bytes: in chat logprobs, the bytes of the generated tokens join to exactly the UTF-8 of the text;
  a token's string is its text, or "bytes:" and its escaped bytes (OpenAI's spelling) when they are
  not valid UTF-8, in chat and completions alike; text_offset counts characters of the text.
- Distinct keys: completions with logprobs=20 keep 20 top_logprobs entries at every position, and
  a key equal to the sampled token's string is the sampled token's.
- Stop strings: the logprobs (tokens, text_offset, chat content) end with the token in which the
  cut text ends, streamed (the chunks join to the whole answer) and not, and in `generate --prompts`.
- --return-tokens-as-token-ids: every token and key is "token_id:<id>".
- prompt_logprobs (vLLM's shape: null, then {id: {logprob, rank, decoded_token}} per prompt token),
  in completions' choices and chat's response: a prompt token's logprob and rank are those the
  model gives it as a generated token after the same prefix (the oracle: a greedy one-token
  request on the prompt without its last token); echo with logprobs puts the prompt's tokens
  before the generated ones, streamed and not; with stream they are refused, as vLLM does.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from test_server_openai import BINARY, MODEL_OPTS, Server, check, failures, model_folder, offline

ESCAPES = {0x5C: "\\\\", 0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def spelled(raw):
    """The token string of a token whose bytes are `raw`."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "bytes:" + "".join(ESCAPES.get(c, chr(c) if 0x20 <= c < 0x7F else f"\\x{c:02x}") for c in raw)


def unspelled(token):
    """The bytes a token string names (the inverse of spelled)."""
    if not token.startswith("bytes:"):
        return token.encode("utf-8")
    out, s, i = bytearray(), token[6:], 0
    while i < len(s):
        if s[i] != "\\":
            out.append(ord(s[i]))
            i += 1
        elif s[i + 1] == "x":
            out.append(int(s[i + 2:i + 4], 16))
            i += 4
        else:
            out.append({"\\": 0x5C, "t": 0x09, "n": 0x0A, "r": 0x0D}[s[i + 1]])
            i += 2
    return bytes(out)


class BuiltinServer(Server):
    """`fullgraph serve` without --model: the built-in tiny model."""

    def __init__(self, tmp, extra=()):  # pylint: disable=super-init-not-called
        from test_server_openai import free_port
        self.port = free_port()
        self.log_path = os.path.join(tmp, f"server-{self.port}.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([BINARY, "serve", "--port", str(self.port), *extra], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        self.statuses = []


def post(server, path, body):
    status, raw, _ = server.request("POST", path, body=json.dumps(body).encode())
    check(status == 200, f"{path} {body}: status {status}: {raw[:300]!r}")
    if not body.get("stream"):
        return json.loads(raw)
    events = [e[6:] for e in raw.decode().split("\n\n") if e.startswith("data: ")]
    check(events and events[-1] == "[DONE]", f"{path}: stream without [DONE]")
    return [json.loads(e) for e in events[:-1]]


def chars(raw):
    return len(raw.decode("utf-8", "replace"))


def offsets_of(raws):
    """Each token's text_offset: the character it starts in (one that continues a character starts in it)."""
    out, before = [], b""
    for raw in raws:
        continues = before and chars(before + raw) < chars(before) + chars(raw)
        out.append(chars(before) - (1 if continues else 0))
        before += raw
    return out


def check_covers(label, raws, text):
    """The tokens reach the end of the text, and the last one starts before it."""
    joined = b"".join(raws).decode("utf-8", "replace")
    check(joined.startswith(text) and (not raws or offsets_of(raws)[-1] < len(text)),
          f"{label}: logprob tokens {[spelled(r) for r in raws]} for the text {text!r}")


def joined_completion_logprobs(chunks):
    out = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
    for chunk in chunks:
        for c in chunk["choices"]:
            for key in out:
                out[key] += (c["logprobs"] or {}).get(key, [])
    return out


def joined_chat_logprobs(chunks):
    return [e for chunk in chunks for c in chunk["choices"] for e in ((c["logprobs"] or {}).get("content") or [])]


# ---------------------------------------------------------------------------------------------


def check_chat_bytes(label, message, content):
    raw = b"".join(bytes(e["bytes"]) for e in content)
    # The model may generate broken UTF-8, which the text shows as U+FFFD (as Python's "replace" does
    # for byte-level BPE); where it is valid the bytes are exactly the text's.
    check(raw.decode("utf-8", "replace") == message, f"{label}: bytes join to {raw!r}, the text is {message!r}")
    for e in content:
        for x in [e] + e["top_logprobs"]:
            check(x["token"] == spelled(bytes(x["bytes"])), f"{label}: token {x['token']!r} for bytes {x['bytes']}")


def check_completion_strings(label, text, lp):
    raw = b"".join(unspelled(t) for t in lp["tokens"])
    check(raw.decode("utf-8", "replace") == text, f"{label}: tokens join to {raw!r}, the text is {text!r}")
    offsets = offsets_of([unspelled(t) for t in lp["tokens"]])
    check(lp["text_offset"] == offsets, f"{label}: text_offset {lp['text_offset']} != {offsets}")


def bytes_and_strings(server, model, prompts, has_chat):
    for p, n in [(p, n) for p in prompts for n in (3, 16)]:  # the built-in model answers "hi" with U+0304 in 2 tokens
        chat = has_chat and post(server, "/v1/chat/completions",
                                 {"model": model, "messages": [{"role": "user", "content": p}], "max_tokens": n,
                                  "temperature": 0, "logprobs": True, "top_logprobs": 5, "ignore_eos": True})
        if chat:
            message = chat["choices"][0]["message"]["content"]
            check_chat_bytes(f"{model} chat {p!r}", message, chat["choices"][0]["logprobs"]["content"])
        text = post(server, "/v1/completions", {"model": model, "prompt": p, "max_tokens": n, "temperature": 0,
                                                "logprobs": 5, "ignore_eos": True})["choices"][0]
        check_completion_strings(f"{model} completion {p!r}", text["text"], text["logprobs"])


def twenty_distinct(server, model, prompts):
    for p in prompts:
        c = post(server, "/v1/completions", {"model": model, "prompt": p, "max_tokens": 8, "logprobs": 20,
                                             "temperature": 1.0, "seed": 5, "ignore_eos": True})["choices"][0]
        lp = c["logprobs"]
        sizes = [len(top) for top in lp["top_logprobs"]]
        check(sizes == [20] * len(sizes), f"{model} {p!r}: top_logprobs sizes {sizes}")
        for token, value, top in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"]):
            check(token not in top or top[token] == value, f"{model} {p!r}: key {token!r} is not the sampled token's")


def stop_strings(server, model, folder, tmp):
    """Cut a greedy answer at stop strings picked from it; logprobs must end where the text ends."""
    base = {"model": model, "max_tokens": 20, "temperature": 0, "ignore_eos": True}
    prompt = "Tell me"
    full = post(server, "/v1/completions", dict(base, prompt=prompt))["choices"][0]["text"]
    if not check(len(full) >= 8, f"{model}: a greedy answer too short to cut: {full!r}"):
        return
    stops = [full[i:i + 2] for i in (1, len(full) // 2, len(full) - 3)] + [full[:1]]
    lines = []
    for stop in stops:
        for include in (False, True):
            extra = {"stop": [stop], "include_stop_str_in_output": include}
            label = f"{model} stop {stop!r}{' (included)' if include else ''}"
            whole = post(server, "/v1/completions", dict(base, prompt=prompt, logprobs=2, **extra))["choices"][0]
            text, lp = whole["text"], whole["logprobs"]
            cut = full.find(stop) + (len(stop) if include else 0)
            check(text == full[:cut], f"{label}: text {text!r}")
            check_covers(label, [unspelled(t) for t in lp["tokens"]], text)
            check(lp["text_offset"] == offsets_of([unspelled(t) for t in lp["tokens"]]), f"{label}: text_offset")
            chunks = post(server, "/v1/completions", dict(base, prompt=prompt, logprobs=2, stream=True, **extra))
            check(joined_completion_logprobs(chunks) == lp, f"{label}: streamed logprobs differ")
            lines.append((dict(prompt=prompt, max_tokens=20, temperature=0, ignore_eos=True, logprobs=2, **extra), lp))
    if folder is None:
        return
    for (line, lp), got in zip(lines, offline(folder, [l for l, _ in lines], tmp, "stops")):
        check([x["logprob"] for x in got["logprobs"]] == lp["token_logprobs"],
              f"{model} generate --prompts stop {line['stop']}: logprobs {got['logprobs']} vs the server's {lp}")


def chat_stop_strings(server, model):
    base = {"model": model, "max_tokens": 20, "temperature": 0, "ignore_eos": True, "logprobs": True,
            "top_logprobs": 2, "messages": [{"role": "user", "content": "Tell me"}]}
    full = post(server, "/v1/chat/completions", base)["choices"][0]["message"]["content"]
    for stop in [full[i:i + 2] for i in (1, len(full) // 2, len(full) - 3)]:
        for include in (False, True):
            label = f"{model} chat stop {stop!r}{' (included)' if include else ''}"
            extra = {"stop": [stop], "include_stop_str_in_output": include}
            choice = post(server, "/v1/chat/completions", dict(base, **extra))["choices"][0]
            content = choice["logprobs"]["content"]
            text = choice["message"]["content"]
            check(text == full[:full.find(stop) + (len(stop) if include else 0)], f"{label}: text {text!r}")
            check_covers(label, [bytes(e["bytes"]) for e in content], text)
            streamed = post(server, "/v1/chat/completions", dict(base, stream=True, **extra))
            check(joined_chat_logprobs(streamed) == content, f"{label}: streamed logprobs differ")


def token_ids(tmp):
    server = BuiltinServer(tmp, ["--return-tokens-as-token-ids"])
    try:
        server.wait_ready()
        c = post(server, "/v1/completions", {"prompt": "hi", "max_tokens": 6, "logprobs": 3})["choices"][0]["logprobs"]
        names = c["tokens"] + [k for top in c["top_logprobs"] for k in top]
        check(all(t.startswith("token_id:") and t[9:].isdigit() for t in names),
              f"--return-tokens-as-token-ids is not honoured: {names}")
        chat = post(server, "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 6,
                                                     "logprobs": True, "top_logprobs": 2})
        content = chat["choices"][0]["logprobs"]["content"]
        names = [x["token"] for e in content for x in [e] + e["top_logprobs"]]
        check(all(t.startswith("token_id:") for t in names), f"chat token ids: {names}")
    finally:
        server.stop()


def close(a, b):
    return abs(a - b) <= 1e-4 * max(1.0, abs(a))  # the same fp32 row, from prefills of other lengths


def prompt_logprobs(server, model, has_chat):
    """vLLM's prompt_logprobs and echo's prompt logprobs, checked against generated logprobs."""
    # The oracle: the greedy next token after `head`, as generated: its string and logprob.
    head = post(server, "/tokenize", {"model": model, "prompt": "Hello there, how"})["tokens"]
    first = post(server, "/v1/completions", {"model": model, "prompt": head, "max_tokens": 1, "temperature": 0,
                                             "logprobs": 2})["choices"][0]["logprobs"]
    greedy, greedy_lp = first["tokens"][0], first["token_logprobs"][0]
    prompt = head + [head[-1]]  # any last token: its entry's rank 1 is the greedy token
    body = {"model": model, "prompt": prompt, "max_tokens": 2, "temperature": 0, "prompt_logprobs": 2}
    pl = post(server, "/v1/completions", body)["choices"][0].get("prompt_logprobs")
    check(isinstance(pl, list) and len(pl) == len(prompt) and pl[0] is None,
          f"{model}: prompt_logprobs shape: {str(pl)[:200]}")
    if not isinstance(pl, list) or len(pl) != len(prompt):
        return
    for i in range(1, len(prompt)):
        own = pl[i].get(str(prompt[i]))
        check(own is not None and own["rank"] >= 1 and "decoded_token" in own,
              f"{model}: prompt token {i} missing from its entry: {pl[i]}")
        others = [v["rank"] for k, v in pl[i].items() if k != str(prompt[i])]
        check(all(1 <= r <= 2 for r in others) and len(pl[i]) in (2, 3), f"{model}: prompt token {i}: {pl[i]}")
    best = [v for v in pl[-1].values() if v["rank"] == 1]
    check(len(best) == 1 and best[0]["decoded_token"] == greedy and close(best[0]["logprob"], greedy_lp),
          f"{model}: the last entry's rank 1 {best} is not the greedy token {greedy!r} {greedy_lp}")
    own = pl[-1][str(prompt[-1])]
    check(own["logprob"] <= greedy_lp + 1e-6 and (own["rank"] == 1) == (own["decoded_token"] == greedy),
          f"{model}: the last prompt token {own} against the greedy {greedy!r} {greedy_lp}")
    # Echo with logprobs: the prompt's tokens first (the first without a logprob), then the output's.
    body = {"model": model, "prompt": head, "max_tokens": 3, "temperature": 0, "logprobs": 1, "echo": True}
    elp = post(server, "/v1/completions", body)["choices"][0]["logprobs"]
    check(len(elp["tokens"]) > len(head) and elp["token_logprobs"][0] is None and elp["top_logprobs"][0] is None,
          f"{model}: echo logprobs: {str(elp)[:300]}")
    scored = [pl[i][str(prompt[i])]["logprob"] for i in range(1, len(head))]
    check(all(close(a, b) for a, b in zip(elp["token_logprobs"][1:len(head)], scored))
          and elp["tokens"][len(head)] == greedy and close(elp["token_logprobs"][len(head)], greedy_lp),
          f"{model}: echo's logprobs {elp['token_logprobs'][:len(head) + 1]} against {scored} and {greedy_lp}")
    streamed = post(server, "/v1/completions", dict(body, stream=True))
    check(joined_completion_logprobs(streamed) == elp, f"{model}: streamed echo logprobs differ from the whole")
    status, raw, _ = server.request("POST", "/v1/completions", body=json.dumps(
        {"model": model, "prompt": prompt, "max_tokens": 2, "prompt_logprobs": 1, "stream": True}).encode())
    check(status == 400 and b"prompt_logprobs" in raw, f"{model}: stream with prompt_logprobs: {status} {raw[:200]!r}")
    if has_chat:
        chat = post(server, "/v1/chat/completions", {"model": model, "messages": [{"role": "user", "content": "hi"}],
                                                     "max_tokens": 2, "prompt_logprobs": 0})
        cpl = chat.get("prompt_logprobs")
        check(isinstance(cpl, list) and cpl[0] is None and len(cpl) == chat["usage"]["prompt_tokens"]
              and all(len(e) == 1 for e in cpl[1:]), f"{model}: chat prompt_logprobs: {str(cpl)[:200]}")


def main():
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        builtin = BuiltinServer(tmp)
        llama = model_folder(tmp, "tiny-llama2tok", "llama2")
        qwen = model_folder(tmp, "tiny-qwen3tok", "qwen3")
        servers = [builtin, Server(llama, ["llama"], tmp), Server(qwen, ["qwen"], tmp)]
        try:
            for server, model, folder in zip(servers, ["fullgraph-builtin", "llama", "qwen"], [None, llama, qwen]):
                server.wait_ready()
                prompts = ["hi", "Hello there", "Ünïcödé 🦙 text", "数字"]
                has_chat = folder != llama  # the Llama-2 tokenizer has no chat template
                bytes_and_strings(server, model, prompts, has_chat)
                twenty_distinct(server, model, prompts)
                stop_strings(server, model, folder, tmp)
                if has_chat:
                    chat_stop_strings(server, model)
                prompt_logprobs(server, model, has_chat)
                print(f"{model} checked ({time.time() - start:.1f} s)", flush=True)
            token_ids(tmp)
        finally:
            for s in servers:
                if s.proc.poll() is None:
                    s.proc.kill()
                    s.proc.wait()
            if failures:
                for s in servers:
                    print(f"--- {s.log_path} (tail)\n" + open(s.log_path, errors="replace").read()[-2000:])
    print(f"{len(failures)} failures in {time.time() - start:.1f} s")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
