"""The request surface of `fullgraph serve` as a vLLM client meets it, over HTTP on the CPU backend.

- GET /v1/models/{id} (a served name, percent-encoded or not) and its 404 naming `model`.
- POST /tokenize and /detokenize with vLLM's shapes: a round trip through the model's tokenizer.
- X-Request-Id: the response id is "cmpl-" + the header's id, and the header comes back.
- --max-logprobs: a request asking for more is a 400 naming the field.
- Sampling defaults: an omitted temperature samples (1.0, not greedy); a model folder whose
  generation_config.json says temperature 0 makes an omitted temperature greedy under
  --generation-config auto, and not under vllm.
- --scheduling-policy priority accepts a request's `priority`; without it a non-zero one is a 400.
- logit_bias reaches the sampler: +100 on a token makes greedy decoding repeat it.
- stream_options.continuous_usage_stats: every streamed chunk carries the usage so far.
- The prompt fields (add_special_tokens, truncate_prompt_tokens, add_generation_prompt,
  continue_final_message) mean the same in `generate --prompts` as served: the same prompt
  token count and the same greedy text, and each changes the prompt it is given.
"""
import http.client
import json
import os
import subprocess
import sys
import tempfile

from serve_process import BINARY, TESTDATA, Server, check, failures

E2E = os.path.join(TESTDATA, "e2e", "tiny-qwen3tok")
TOKENIZER = os.path.join(TESTDATA, "tokenizers", "qwen3")


def model_folder(tmp, generation_config):
    """The e2e model with the qwen3 tokenizer and the given generation_config.json."""
    path = os.path.join(tmp, "model")
    os.makedirs(path)
    for name in ("config.json", "model.safetensors"):
        os.symlink(os.path.join(E2E, name), os.path.join(path, name))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        os.symlink(os.path.join(TOKENIZER, name), os.path.join(path, name))
    with open(os.path.join(path, "generation_config.json"), "w") as f:
        json.dump(generation_config, f)
    return path


def complete(server, **fields):
    status, body, headers = server.request("POST", "/v1/completions", {"prompt": "Hello", "max_tokens": 8, **fields})
    check(status == 200, f"completion {fields}: {status} {body}")
    return body["choices"][0]["text"] if status == 200 else None


def continuous_usage(server):
    """stream_options.continuous_usage_stats: every chunk carries the usage so far (vLLM's)."""
    body = {"prompt": "hi", "max_tokens": 4, "ignore_eos": True, "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True}}
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        conn.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
        raw = conn.getresponse().read().decode()
    finally:
        conn.close()
    chunks = [json.loads(e[6:]) for e in raw.split("\n\n") if e.startswith("data: {")]
    token_chunks = [c for c in chunks if c["choices"]]
    counts = [c.get("usage", {}).get("completion_tokens") for c in token_chunks]
    prompts = {c.get("usage", {}).get("prompt_tokens") for c in chunks}
    check(len(token_chunks) == 4 and counts == [1, 2, 3, 4] and len(prompts) == 1 and None not in prompts
          and chunks[-1]["usage"]["completion_tokens"] == 4, f"continuous usage: {counts} {prompts}")


def builtin_checks(tmp):
    server = Server(["--max-logprobs", "5", "--scheduling-policy", "priority"], tmp)
    try:
        server.wait_ready()
        status, body, _ = server.request("GET", "/v1/models/fullgraph-builtin")
        check(status == 200 and body["id"] == "fullgraph-builtin" and body["object"] == "model", f"model: {body}")
        status, body, _ = server.request("GET", "/v1/models/no-such-model")
        check(status == 404 and body["error"]["param"] == "model", f"unknown model: {status} {body}")

        status, tokens, _ = server.request("POST", "/tokenize", {"prompt": "Hello world"})
        check(status == 200 and tokens["count"] == len(tokens["tokens"]) > 0, f"tokenize: {status} {tokens}")
        status, text, _ = server.request("POST", "/detokenize", {"tokens": tokens["tokens"]})
        check(status == 200 and text["prompt"].endswith("Hello world"), f"detokenize: {status} {text}")

        status, body, headers = server.request("POST", "/v1/completions", {"prompt": "hi", "max_tokens": 2},
                                               headers={"X-Request-Id": "abc-123"})
        check(status == 200 and body["id"] == "cmpl-abc-123", f"response id from X-Request-Id: {body.get('id')}")
        check(headers.get("X-Request-Id") == "abc-123", f"X-Request-Id echoed: {headers}")

        status, body, _ = server.request("POST", "/v1/completions", {"prompt": "hi", "max_tokens": 2, "logprobs": 6})
        check(status == 400 and body["error"]["param"] == "logprobs", f"--max-logprobs 5, logprobs 6: {status} {body}")
        check(complete(server, logprobs=5) is not None, "logprobs 5 under --max-logprobs 5")

        check(complete(server, priority=7) is not None, "priority under --scheduling-policy priority")
        # Omitted temperature: 1.0, so different seeds give different texts (greedy would not).
        texts = {complete(server, seed=s, max_tokens=16) for s in range(6)}
        check(len(texts) > 1, f"an omitted temperature sampled: {texts}")
        # logit_bias: token 300, pushed to +100, is all that greedy decoding writes.
        biased = {"prompt": [1, 2, 3], "max_tokens": 4, "temperature": 0, "logit_bias": {"300": 100}}
        status, body, _ = server.request("POST", "/v1/completions", biased)
        _, want, _ = server.request("POST", "/detokenize", {"tokens": [300] * 4})
        check(status == 200 and body["choices"][0]["text"] == want["prompt"],
              f"logit_bias +100 on token 300: {status} {body} against {want}")
        continuous_usage(server)
    finally:
        check(server.stop() == 0, "built-in server: exit status")
    server = Server([], tmp)
    try:
        server.wait_ready()
        status, body, _ = server.request("POST", "/v1/completions", {"prompt": "hi", "max_tokens": 2, "priority": 1})
        check(status == 400 and body["error"]["param"] == "priority", f"priority without the policy: {status} {body}")
    finally:
        check(server.stop() == 0, "fcfs server: exit status")


def generation_config_checks(tmp):
    folder = model_folder(tmp, {"eos_token_id": 2, "temperature": 0.0})
    for mode, greedy in (("auto", True), ("vllm", False)):
        server = Server([folder, "--generation-config", mode, "--rope-inv-freq-bf16"], tmp)
        try:
            server.wait_ready()
            texts = {complete(server, seed=s, max_tokens=16, ignore_eos=True) for s in range(6)}
            check((len(texts) == 1) == greedy, f"--generation-config {mode}: {len(texts)} distinct texts of 6 seeds")
        finally:
            check(server.stop() == 0, f"--generation-config {mode}: exit status")


def prompt_field_checks(tmp):
    chat = [{"role": "user", "content": "hi there"}]
    partial = chat + [{"role": "assistant", "content": "Well"}]
    greedy = {"max_tokens": 4, "temperature": 0, "ignore_eos": True}
    cases = [  # (endpoint, line, the same request without the field)
        ("completions", {"prompt": "Hello there friend", "add_special_tokens": False}, {"prompt": "Hello there friend"}),
        ("completions", {"prompt": "Hello there friend", "truncate_prompt_tokens": 2}, {"prompt": "Hello there friend"}),
        ("chat", {"messages": chat, "add_generation_prompt": False}, {"messages": chat}),
        ("chat", {"messages": partial, "continue_final_message": True}, {"messages": partial}),
        ("chat", {"messages": chat, "add_special_tokens": True}, {"messages": chat}),
    ]
    lines = [dict(line, **greedy) for _, line, _ in cases] + [dict(plain, **greedy) for _, _, plain in cases]
    path = os.path.join(tmp, "prompts.jsonl")
    with open(path, "w") as f:
        f.write("".join(json.dumps(line) + "\n" for line in lines))
    # The built-in model: its tokenizer adds a BOS, so add_special_tokens changes a prompt.
    proc = subprocess.run([BINARY, "generate", "--prompts", path, "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if not check(proc.returncode == 0, f"generate --prompts: {proc.stderr.decode(errors='replace')[-500:]}"):
        return
    offline = [json.loads(l) for l in proc.stdout.decode().splitlines() if l]
    server = Server([], tmp)
    try:
        server.wait_ready()
        for i, (endpoint, line, _) in enumerate(cases):
            status, body, _ = server.request("POST", f"/v1/{'chat/' if endpoint == 'chat' else ''}completions",
                                             dict(line, **greedy))
            if not check(status == 200, f"{line}: status {status} {body}"):
                continue
            choice = body["choices"][0]
            text = choice["message"]["content"] if endpoint == "chat" else choice["text"]
            check(body["usage"]["prompt_tokens"] == offline[i]["prompt_tokens"] and text == offline[i]["text"],
                  f"{line}: served {body['usage']['prompt_tokens']} prompt tokens, {text!r}; offline "
                  f"{offline[i]['prompt_tokens']}, {offline[i]['text']!r}")
            check(offline[i]["prompt_tokens"] != offline[len(cases) + i]["prompt_tokens"],
                  f"{line}: the field did not change the prompt ({offline[i]['prompt_tokens']} tokens either way)")
    finally:
        check(server.stop() == 0, "prompt fields: exit status")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        builtin_checks(tmp)
        generation_config_checks(tmp)
        prompt_field_checks(tmp)
    print(f"{len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
