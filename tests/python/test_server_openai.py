"""`fullgraph serve` end to end on the CPU backend, with the e2e fixture models.

- Health: /health answers 503 while the model loads (the server listens first), then 200.
- Outputs: through the official `openai` client, streamed and not, /v1/completions and
  /v1/chat/completions give exactly what `fullgraph generate --prompts` gives offline for the same
  requests (text, finish reason, usage, logprob values), and the e2e goldens (transformers' greedy
  12-token continuations with ignore_eos).
- Protocol: one id per streamed response, OpenAI object types, role chunk, include_usage, [DONE];
  n > 1 with seeds seed + i; /v1/models; /metrics in Prometheus text format.
- Defaults: an omitted temperature samples (vLLM's 1.0), so requests compared with the offline run
  say temperature 0 or give a seed; two unseeded choices of n = 2 differ.
- Validation: the table of bad requests in openai_bad_requests.py (raw HTTP), each with its
  status and the error's `param` (rows with 200: requests once refused, now served); error
  messages stay short and say where a JSON syntax error is.
- API key: generation endpoints need it, /health, /v1/models and /metrics do not.
- Limits: a request past the bounded queue gets 503; a request that trickles in past the read
  timeout gets 408.
- Disconnects: a client leaving a non-streamed request gets it aborted.
- Load: 200 concurrent streaming clients, a fifth of them disconnecting mid-stream; every other
  stream ends with [DONE], the disconnected ones are aborted, and afterwards every KV block is free.
- Shutdown: SIGTERM while a stream is in flight: the stream completes, the process exits 0.
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import openai

from openai_bad_requests import bad_requests, raw_request
from serve_process import BINARY, TESTDATA, check, failures, free_port, model_folder
MODEL_OPTS = ["--rope-inv-freq-bf16"]
LLAMA_NAME = "tiny-llama2"
QWEN_NAMES = ["tiny-qwen3", "qwen-alias"]
API_KEY = "sk-test-key"

def offline(model, lines, tmp, name):
    """`fullgraph generate --prompts`: one result dict per line."""
    path = os.path.join(tmp, name + ".jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    proc = subprocess.run([BINARY, "generate", "--model", model, *MODEL_OPTS, "--prompts", path, "--no-progress"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if proc.returncode != 0:
        sys.exit("fullgraph generate --prompts failed: " + proc.stderr.decode("utf-8", "replace"))
    return [json.loads(l) for l in proc.stdout.decode("utf-8").split("\n") if l]


class Server:
    def __init__(self, model, names, tmp, extra=()):
        self.port = free_port()
        self.log_path = os.path.join(tmp, f"server-{self.port}.log")
        self.log = open(self.log_path, "w")
        args = [BINARY, "serve", "--model", model, *MODEL_OPTS, "--port", str(self.port),
                "--served-model-name", *names, *extra]
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        self.statuses = []  # /health answers seen while starting

    def request(self, method, path, body=None, headers=None, timeout=60):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, resp.read(), resp
        finally:
            conn.close()

    def wait_ready(self, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                sys.exit(f"the server exited with {self.proc.returncode}: " + open(self.log_path).read())
            try:
                status, body, _ = self.request("GET", "/health", timeout=5)
                self.statuses.append((status, body))
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.02)
        sys.exit("the server did not become healthy: " + open(self.log_path).read())

    def metrics(self):
        status, body, _ = self.request("GET", "/metrics")
        check(status == 200, f"/metrics answered {status}")
        values = {}
        for line in body.decode().split("\n"):
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return body.decode(), values

    def stop(self, sig=signal.SIGTERM, timeout=60):
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = "timeout"
        self.log.close()
        return code


def metric(values, name, **labels):
    for key, value in values.items():
        if key.split("{")[0] == name and all(f'{k}="{v}"' in key for k, v in labels.items()):
            return value
    return None


# ---------------------------------------------------------------------------------------------
# Offline equality


def sampling_fields(req):
    return {k: v for k, v in req.items() if k not in ("prompt", "messages", "n", "stream", "model")}


def check_completion(label, text, finish, usage_completion, lp, want, want_prompt_tokens=None, usage_prompt=None):
    check(text == want.get("text"), f"{label}: text {text!r} != offline {want.get('text')!r}")
    check(finish == want["finish_reason"], f"{label}: finish_reason {finish} != offline {want['finish_reason']}")
    if usage_completion is not None:
        check(usage_completion == len(want["token_ids"]),
              f"{label}: completion_tokens {usage_completion} != {len(want['token_ids'])}")
    if usage_prompt is not None:
        check(usage_prompt == want["prompt_tokens"], f"{label}: prompt_tokens {usage_prompt} != {want['prompt_tokens']}")
    if lp is not None:
        values = [x["logprob"] for x in want["logprobs"]]
        check(lp == values, f"{label}: logprobs {lp} != offline {values}")


def completions_vs_offline(client, model, tmp):
    reqs = [
        {"prompt": "Once upon a time", "max_tokens": 12, "ignore_eos": True, "temperature": 0},
        {"prompt": "The capital of France is", "max_tokens": 9, "temperature": 0.8, "seed": 7, "top_k": 50},
        {"prompt": "A quick brown fox", "max_tokens": 10, "temperature": 1.0, "seed": 3, "top_p": 0.9, "min_p": 0.05},
        {"prompt": "Penalties apply", "max_tokens": 10, "temperature": 0.7, "seed": 11, "presence_penalty": 0.5,
         "frequency_penalty": 0.4, "repetition_penalty": 1.2},
        {"prompt": "Once upon a time", "max_tokens": 12, "stop": [" involves"], "temperature": 0},
        {"prompt": "Once upon a time", "max_tokens": 12, "stop": [" involves"], "include_stop_str_in_output": True,
         "temperature": 0},
        {"prompt": "Once upon a time", "max_tokens": 12, "stop_token_ids": [14657], "temperature": 0},
        {"prompt": "Logprobs please", "max_tokens": 6, "logprobs": 3, "temperature": 0.5, "seed": 99},
        {"prompt": "Two choices", "max_tokens": 6, "temperature": 1.0, "seed": 1234, "n": 2},
        {"prompt": [1, 415, 5565, 302, 4843, 349], "max_tokens": 8, "min_tokens": 4, "temperature": 0},
    ]
    lines = []
    for r in reqs:
        for i in range(r.get("n", 1)):
            line = sampling_fields(r)
            line["prompt" if isinstance(r["prompt"], str) else "prompt_ids"] = r["prompt"]
            if "seed" in r:
                line["seed"] = r["seed"] + i
            lines.append(line)
    want = offline(model, lines, tmp, "completions")
    at = 0
    for k, r in enumerate(reqs):
        n = r.get("n", 1)
        expected = want[at:at + n]
        at += n
        extra = {key: r[key] for key in ("ignore_eos", "top_k", "min_p", "repetition_penalty", "stop_token_ids",
                                         "min_tokens", "include_stop_str_in_output") if key in r}
        kwargs = {key: r[key] for key in ("max_tokens", "temperature", "seed", "top_p", "presence_penalty",
                                          "frequency_penalty", "stop", "logprobs", "n") if key in r}
        # Not streamed.
        resp = client.completions.create(model=LLAMA_NAME, prompt=r["prompt"], extra_body=extra, **kwargs)
        check(resp.object == "text_completion" and resp.id.startswith("cmpl-"), f"completion {k}: object/id")
        check(len(resp.choices) == n, f"completion {k}: {len(resp.choices)} choices")
        check(resp.usage.completion_tokens == sum(len(w["token_ids"]) for w in expected),
              f"completion {k}: usage.completion_tokens {resp.usage.completion_tokens}")
        check(resp.usage.prompt_tokens == expected[0]["prompt_tokens"], f"completion {k}: usage.prompt_tokens")
        for c in sorted(resp.choices, key=lambda c: c.index):
            lp = c.logprobs.token_logprobs if "logprobs" in r else None
            check_completion(f"completion {k}.{c.index}", c.text, c.finish_reason, None, lp, expected[c.index])
            if "logprobs" in r:
                check(len(c.logprobs.tokens) == len(expected[c.index]["token_ids"]), f"completion {k}: logprob tokens")
                check(c.logprobs.text_offset[0] == 0, f"completion {k}: text_offset starts at 0")
                for top, w in zip(c.logprobs.top_logprobs, expected[c.index]["logprobs"]):
                    check(sorted(top.values(), reverse=True) == [t["logprob"] for t in w["top"]][:len(top)],
                          f"completion {k}: top_logprobs {top} vs {w['top']}")
        # Streamed, with usage at the end.
        stream = client.completions.create(model=LLAMA_NAME, prompt=r["prompt"], extra_body=extra, stream=True,
                                           stream_options={"include_usage": True}, **kwargs)
        texts, finishes, lps, ids, usage = [""] * n, [None] * n, [[] for _ in range(n)], set(), None
        for chunk in stream:
            ids.add(chunk.id)
            check(chunk.object == "text_completion", f"stream {k}: chunk object {chunk.object}")
            if not chunk.choices:
                usage = chunk.usage
                continue
            check(usage is None, f"stream {k}: a chunk after the usage chunk")
            for c in chunk.choices:
                texts[c.index] += c.text
                if c.finish_reason:
                    finishes[c.index] = c.finish_reason
                if c.logprobs:
                    lps[c.index] += c.logprobs.token_logprobs
        check(len(ids) == 1, f"stream {k}: {len(ids)} ids in one response")
        check(usage is not None and usage.completion_tokens == sum(len(w["token_ids"]) for w in expected),
              f"stream {k}: usage chunk {usage}")
        for i in range(n):
            check_completion(f"stream {k}.{i}", texts[i], finishes[i], None, lps[i] if "logprobs" in r else None,
                             expected[i])


def chat_vs_offline(client, model, tmp):
    convo = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a color."}]
    reqs = [
        {"messages": convo, "max_tokens": 8, "temperature": 0.9, "seed": 5},
        {"messages": convo, "max_tokens": 6, "logprobs": True, "top_logprobs": 2, "ignore_eos": True,
         "temperature": 0},
        {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."},
                      {"role": "user", "content": "Again?"}], "max_tokens": 7, "ignore_eos": True, "temperature": 0},
    ]
    lines = []
    for r in reqs:
        line = sampling_fields(r)
        line.pop("logprobs", None)
        line.pop("top_logprobs", None)
        if r.get("logprobs"):
            line["logprobs"] = r.get("top_logprobs", 0)
        line["messages"] = r["messages"]
        lines.append(line)
    want = offline(model, lines, tmp, "chat")
    for k, (r, w) in enumerate(zip(reqs, want)):
        kwargs = {key: r[key] for key in ("max_tokens", "temperature", "seed", "logprobs", "top_logprobs") if key in r}
        extra = {"ignore_eos": True} if r.get("ignore_eos") else {}
        resp = client.chat.completions.create(model=QWEN_NAMES[1], messages=r["messages"], extra_body=extra, **kwargs)
        check(resp.object == "chat.completion" and resp.id.startswith("chatcmpl-"), f"chat {k}: object/id")
        check(resp.model == QWEN_NAMES[0], f"chat {k}: model {resp.model}")
        c = resp.choices[0]
        check(c.message.role == "assistant", f"chat {k}: role {c.message.role}")
        lp = [x.logprob for x in c.logprobs.content] if r.get("logprobs") else None
        check_completion(f"chat {k}", c.message.content, c.finish_reason, resp.usage.completion_tokens, lp, w,
                         usage_prompt=resp.usage.prompt_tokens)
        if r.get("logprobs"):
            for entry, x in zip(c.logprobs.content, w["logprobs"]):
                check([t.logprob for t in entry.top_logprobs] == [t["logprob"] for t in x["top"]],
                      f"chat {k}: top_logprobs")
                # A token that holds part of a character is named by its bytes (test_server_logprobs.py).
                check(entry.token.startswith("bytes:") or bytes(entry.bytes) == entry.token.encode("utf-8"),
                      f"chat {k}: bytes of the token")
        stream = client.chat.completions.create(model=QWEN_NAMES[0], messages=r["messages"], extra_body=extra,
                                                stream=True, stream_options={"include_usage": True}, **kwargs)
        text, finish, role, lps, ids, usage = "", None, None, [], set(), None
        for chunk in stream:
            ids.add(chunk.id)
            check(chunk.object == "chat.completion.chunk", f"chat stream {k}: object {chunk.object}")
            if not chunk.choices:
                usage = chunk.usage
                continue
            d = chunk.choices[0]
            role = role or d.delta.role
            text += d.delta.content or ""
            finish = d.finish_reason or finish
            if d.logprobs and d.logprobs.content:
                lps += [x.logprob for x in d.logprobs.content]
        check(len(ids) == 1 and role == "assistant", f"chat stream {k}: ids {ids}, role {role}")
        check_completion(f"chat stream {k}", text, finish, usage.completion_tokens if usage else -1,
                         lps if r.get("logprobs") else None, w)


def default_sampling(client):
    """vLLM's defaults: an omitted temperature is 1.0, and each unseeded choice draws its own seed."""
    resp = client.completions.create(model=LLAMA_NAME, prompt="Once upon a time", max_tokens=12, n=2,
                                     extra_body={"ignore_eos": True})
    texts = [c.text for c in sorted(resp.choices, key=lambda c: c.index)]
    check(len(texts) == 2 and texts[0] != texts[1], f"unseeded choices of n=2 are identical: {texts}")


def goldens(client, name, e2e, streamed_too=True):
    for line in open(os.path.join(TESTDATA, "e2e", e2e, "e2e_golden.jsonl"), encoding="utf-8"):
        g = json.loads(line)
        opts = dict(max_tokens=12, temperature=0, extra_body={"ignore_eos": True})
        if "prompt" in g:
            got = client.completions.create(model=name, prompt=g["prompt"], **opts).choices[0].text
            by_ids = client.completions.create(model=name, prompt=g["prompt_ids"], **opts).choices[0].text
            check(by_ids == g["output_text"], f"golden {e2e} (token ids): {by_ids!r} != {g['output_text']!r}")
            if streamed_too:
                joined = "".join(c.choices[0].text for c in client.completions.create(
                    model=name, prompt=g["prompt"], stream=True, **opts) if c.choices)
                check(joined == g["output_text"], f"golden {e2e} (streamed): {joined!r}")
        else:
            got = client.chat.completions.create(model=name, messages=g["chat"], **opts).choices[0].message.content
        check(got == g["output_text"], f"golden {e2e}: {got!r} != {g['output_text']!r}")


# ---------------------------------------------------------------------------------------------
# Load


def load_test(server, clients=200, disconnect_every=5):
    # A shared prefix of several KV blocks, so that the prefix cache has something to hit.
    story = "In a quiet village by the sea there lived an old fisherman who told a story every night. " * 2
    prompts = [story + end for end in ("Once upon a time", "The capital of France is", "A quick fox", "Hello")]
    results = [None] * clients
    barrier = threading.Barrier(clients)

    def client(i):
        leaves = i % disconnect_every == 0
        body = json.dumps({"model": LLAMA_NAME, "prompt": prompts[i % len(prompts)], "stream": True,
                           "max_tokens": 2000 if leaves else 24, "ignore_eos": True, "temperature": 0})
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        try:
            barrier.wait()
            conn.request("POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            if resp.status != 200:
                results[i] = f"status {resp.status}: {resp.read()[:200]!r}"
                return
            data = b""
            while True:
                part = resp.read1(65536)
                if not part:
                    break
                data += part
                if leaves and data.count(b"data: ") >= 2:
                    conn.sock.shutdown(socket.SHUT_RDWR)  # gone mid-stream
                    results[i] = "left"
                    return
            events = [e for e in data.decode().split("\n\n") if e]
            ok = events and events[-1] == "data: [DONE]" and all(e.startswith("data: ") for e in events)
            chunks = [json.loads(e[6:]) for e in events[:-1]]
            text = "".join(c["choices"][0]["text"] for c in chunks)
            results[i] = ("done", text) if ok and len({c["id"] for c in chunks}) == 1 else f"bad stream {events[-2:]}"
        except Exception as e:  # noqa: BLE001 — reported as this client's result
            results[i] = f"error {e!r}"
        finally:
            conn.close()

    _, before = server.metrics()
    start = time.time()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=150)
    elapsed = time.time() - start
    left = [i for i in range(clients) if i % disconnect_every == 0]
    stayed = [i for i in range(clients) if i % disconnect_every != 0]
    bad = [(i, results[i]) for i in stayed if not (isinstance(results[i], tuple) and results[i][0] == "done")]
    check(not bad, f"load: {len(bad)} streams did not complete, e.g. {bad[:3]}")
    bad_left = [(i, results[i]) for i in left if results[i] != "left"]
    check(not bad_left, f"load: {len(bad_left)} disconnecting clients misbehaved, e.g. {bad_left[:3]}")
    # Greedy: every client with the same prompt got the same text.
    texts = {}
    for i in stayed:
        if isinstance(results[i], tuple):
            texts.setdefault(i % len(prompts), set()).add(results[i][1])
    check(all(len(t) == 1 for t in texts.values()), f"load: greedy outputs differ across clients: {texts}")
    # The disconnected requests are cancelled (not run to 2000 tokens) and every block comes back.
    deadline = time.time() + 60
    while True:
        text, values = server.metrics()
        idle = (metric(values, "fullgraph:num_requests_running") == 0 and
                metric(values, "fullgraph:num_requests_waiting") == 0 and
                metric(values, "fullgraph:num_requests_held") == 0)
        if idle or time.time() > deadline:
            break
        time.sleep(0.1)
    check(idle, "load: requests still running a minute after the clients finished")
    free = metric(values, "fullgraph:kv_cache_free_blocks")
    usable = metric(values, "fullgraph:kv_cache_usable_blocks")
    check(free == usable and usable > 0, f"load: KV leak: {free} free of {usable} usable blocks")
    aborted = metric(values, "fullgraph:request_success_total", finished_reason="abort") - \
        metric(before, "fullgraph:request_success_total", finished_reason="abort")
    check(aborted == len(left), f"load: {aborted} requests aborted, want {len(left)} (one per disconnect)")
    check(metric(values, "fullgraph:prefix_cache_hits_total") > 0, "load: shared prompts never hit the prefix cache")
    status, _, _ = server.request("GET", "/health")
    check(status == 200, f"load: /health {status} afterwards")
    print(f"load: {clients} streaming clients ({len(left)} disconnecting) in {elapsed:.1f} s; "
          f"{free:.0f}/{usable:.0f} blocks free after", flush=True)


# ---------------------------------------------------------------------------------------------


def protocol_checks(server, client):
    models = client.models.list()
    check([m.id for m in models.data] == [LLAMA_NAME], f"/v1/models: {models}")
    extra = models.data[0].model_extra or {}
    check(extra.get("max_model_len") == 2048 and extra.get("vocab_size") == 32000, f"/v1/models extras: {extra}")
    # The raw stream: framing, role-less completions chunks, [DONE] last.
    body = json.dumps({"prompt": "Hello", "max_tokens": 3, "stream": True, "ignore_eos": True,
                       "stream_options": {"include_usage": True}})
    status, raw, resp = server.request("POST", "/v1/completions", body=body.encode())
    check(status == 200 and resp.getheader("Content-Type", "").startswith("text/event-stream"), "stream content type")
    events = raw.decode().split("\n\n")
    check(events[-2:] == ["data: [DONE]", ""], f"stream ends with [DONE]: {events[-3:]}")
    chunks = [json.loads(e[6:]) for e in events[:-2]]
    check(all("usage" in c for c in chunks) and chunks[-1]["choices"] == [] and
          chunks[-1]["usage"]["completion_tokens"] == 3, "include_usage: usage null, then a usage chunk")
    # Unknown model through the client: a NotFoundError naming the field.
    try:
        client.completions.create(model="no-such-model", prompt="x", max_tokens=1)
        check(False, "unknown model accepted")
    except openai.NotFoundError as e:
        check(e.body.get("param") == "model" and e.body.get("code") == "model_not_found", f"404 body {e.body}")
    text, values = server.metrics()
    for name in ["num_requests_running", "num_requests_waiting", "kv_cache_usage_perc", "prompt_tokens_total",
                 "generation_tokens_total", "num_preemptions_total", "prefix_cache_queries_total",
                 "prefix_cache_hits_total", "graph_steps_total", "eager_steps_total", "kv_cache_free_blocks",
                 "kv_cache_usable_blocks", "time_to_first_token_seconds_count", "inter_token_latency_seconds_sum",
                 "e2e_request_latency_seconds_bucket"]:
        check(metric(values, "fullgraph:" + name) is not None, f"/metrics lacks fullgraph:{name}")
    check(f"# TYPE fullgraph:time_to_first_token_seconds histogram" in text, "histogram TYPE line")
    check(metric(values, "fullgraph:e2e_request_latency_seconds_bucket", le="+Inf") ==
          metric(values, "fullgraph:e2e_request_latency_seconds_count"), "+Inf bucket == count")
    check(metric(values, "fullgraph:generation_tokens_total") > 0 and
          metric(values, "fullgraph:graph_steps_total") > 0, "engine counters move")


def disconnect_non_streamed(server):
    """A client that leaves while a non-streamed request runs: the request is aborted, not finished."""
    _, before = server.metrics()
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": 2000, "ignore_eos": True}).encode()
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        deadline = time.time() + 30
        while time.time() < deadline:  # until it is running
            _, values = server.metrics()
            if metric(values, "fullgraph:generation_tokens_total") > metric(before, "fullgraph:generation_tokens_total"):
                break
            time.sleep(0.01)
    deadline = time.time() + 10
    while time.time() < deadline:
        _, values = server.metrics()
        if metric(values, "fullgraph:num_requests_held") == 0:
            break
        time.sleep(0.02)
    aborted = metric(values, "fullgraph:request_success_total", finished_reason="abort") - \
        metric(before, "fullgraph:request_success_total", finished_reason="abort")
    generated = metric(values, "fullgraph:generation_tokens_total") - metric(before, "fullgraph:generation_tokens_total")
    check(aborted == 1 and generated < 2000, f"non-streamed disconnect: {aborted} aborted, {generated} tokens generated")


def api_key_checks(server):
    body = json.dumps({"messages": [{"role": "user", "content": "x"}], "max_tokens": 1}).encode()
    status, raw, resp = server.request("POST", "/v1/chat/completions", body=body)
    check(status == 401 and json.loads(raw)["error"]["code"] == "invalid_api_key", f"no key: {status} {raw[:100]!r}")
    status, _, _ = server.request("POST", "/v1/chat/completions", body=body,
                                  headers={"Authorization": "Bearer sk-wrong-key"})
    check(status == 401, f"wrong key: {status}")
    status, _, _ = server.request("POST", "/v1/chat/completions", body=body,
                                  headers={"Authorization": "Bearer " + API_KEY})
    check(status == 200, f"right key: {status}")
    for path in ("/health", "/v1/models", "/metrics"):
        status, _, _ = server.request("GET", path)
        check(status == 200, f"{path} without a key: {status}")


def limits_checks(server):
    """The qwen server runs with --max-num-seqs 4 --max-queued-requests 4 --http-read-timeout 2."""
    body = json.dumps({"prompt": "x", "max_tokens": 1, "n": 9}).encode()
    status, raw, _ = server.request("POST", "/v1/completions", body=body, headers={"Authorization": "Bearer " + API_KEY})
    check(status == 503 and json.loads(raw)["error"]["code"] == "server_overloaded", f"queue full: {status} {raw[:120]}")
    start = time.time()
    status, body = raw_request(server.port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n", timeout=10)
    check(status == 408 and body and "error" in body and 1.5 < time.time() - start < 8,
          f"slow request: {status} {body} after {time.time() - start:.1f} s, want 408 after ~2 s")


def drain_check(server):
    """SIGTERM with a stream in flight: the stream completes, then the process exits 0."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.request("POST", "/v1/completions", body=json.dumps(
        {"prompt": "Once upon a time", "max_tokens": 600, "ignore_eos": True, "stream": True,
         "stream_options": {"include_usage": True}}))
    resp = conn.getresponse()
    data = resp.read1(65536)
    server.proc.send_signal(signal.SIGTERM)
    while True:
        part = resp.read1(65536)
        if not part:
            break
        data += part
    conn.close()
    events = [e for e in data.decode().split("\n\n") if e]
    check(events and events[-1] == "data: [DONE]", f"drain: the stream in flight did not complete: {events[-2:]}")
    chunks = [json.loads(e[6:]) for e in events[:-1]]
    check(chunks[-2]["choices"][0]["finish_reason"] == "length" and chunks[-1]["usage"]["completion_tokens"] == 600,
          f"drain: the stream in flight ended early: {chunks[-2:]}")
    try:
        code = server.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        code = "timeout"
    check(code == 0, f"drain: exit status {code}")
    try:
        status, _, _ = server.request("GET", "/health", timeout=2)
        check(status != 200, "drain: still accepting after SIGTERM")
    except OSError:
        pass


def main():
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        llama = model_folder(tmp, "tiny-llama2tok", "llama2")
        qwen = model_folder(tmp, "tiny-qwen3tok", "qwen3")
        server = Server(llama, [LLAMA_NAME], tmp)
        qserver = Server(qwen, QWEN_NAMES, tmp, extra=["--api-key", API_KEY, "--max-num-seqs", "4",
                                                       "--max-queued-requests", "4", "--http-read-timeout", "2"])
        try:
            server.wait_ready()
            loading = [s for s, b in server.statuses if s == 503 and b"model_loading" in b]
            check(loading, f"/health never answered 503 while loading: {server.statuses[:3]}")
            client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="none", max_retries=0,
                                   timeout=120)
            goldens(client, LLAMA_NAME, "tiny-llama2tok")
            completions_vs_offline(client, llama, tmp)
            default_sampling(client)
            protocol_checks(server, client)
            print(f"completions checked ({time.time() - start:.1f} s)", flush=True)
            bad_requests(server)
            disconnect_non_streamed(server)
            load_test(server)

            qserver.wait_ready()
            qclient = openai.OpenAI(base_url=f"http://127.0.0.1:{qserver.port}/v1", api_key=API_KEY, max_retries=0,
                                    timeout=120)
            goldens(qclient, QWEN_NAMES[0], "tiny-qwen3tok", streamed_too=False)
            chat_vs_offline(qclient, qwen, tmp)
            api_key_checks(qserver)
            limits_checks(qserver)
            print(f"chat checked ({time.time() - start:.1f} s)", flush=True)
            check(qserver.stop(signal.SIGINT) == 0, "SIGINT: exit status not 0")
            drain_check(server)
        finally:
            for s in (server, qserver):
                if s.proc.poll() is None:
                    s.proc.kill()
                    s.proc.wait()
            if failures:
                for s in (server, qserver):
                    print(f"--- {s.log_path} (tail)\n" + open(s.log_path, errors="replace").read()[-3000:])
    print(f"{len(failures)} failures in {time.time() - start:.1f} s")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
