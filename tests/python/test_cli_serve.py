"""`fullgraph serve` with vLLM's command line, end to end on the CPU backend.

- `serve MODEL`: the model as a positional argument; a model named ORG/NAME is found in a Hugging
  Face cache ($HF_HUB_CACHE), and /v1/models reports the name as given.
- --tokenizer and an inline --chat-template: the model folder has no tokenizer; a chat completion
  renders through the given template (one that prints "Hello" whatever the chat), so it answers
  exactly what a completion of "Hello" does, which is the e2e golden.
- The stats line: while requests run, vLLM's "Avg prompt throughput: ..." lines reach the log
  (the interval shortened through FULLGRAPH_LOG_STATS_INTERVAL, as vLLM's VLLM_LOG_STATS_INTERVAL);
  --disable-log-stats turns them off.
- vLLM's other serve flags are taken: --max-logprobs, --return-tokens-as-token-ids, --dtype,
  --generation-config, --log-level.
"""
import json
import os
import sys
import tempfile
import time

import serve_process
from serve_process import TESTDATA, check, failures

E2E = os.path.join(TESTDATA, "e2e", "tiny-qwen3tok")
TOKENIZER = os.path.join(TESTDATA, "tokenizers", "qwen3")
STATS = "Avg prompt throughput:"


def weights_only(path):
    """The e2e model's config and weights, without tokenizer files."""
    os.makedirs(path)
    for name in ("config.json", "model.safetensors"):
        os.symlink(os.path.join(E2E, name), os.path.join(path, name))
    return path


class Server(serve_process.Server):
    """The e2e model's server: RoPE as its references rounded it, the stats line every 0.2 s."""

    def __init__(self, args, tmp, env=None):
        super().__init__([*args, "--rope-inv-freq-bf16"], tmp, dict(FULLGRAPH_LOG_STATS_INTERVAL="0.2", **(env or {})))

    def request(self, method, path, body=None, headers=None):
        status, data, _ = super().request(method, path, body, headers)
        return status, data


def golden_prompt_line():
    with open(os.path.join(E2E, "e2e_golden.jsonl"), encoding="utf-8") as f:
        return json.loads(f.readline())


def complete(server, model):
    status, body = server.request("POST", "/v1/completions",
                                  {"model": model, "prompt": "Hello", "max_tokens": 12, "ignore_eos": True,
                                   "temperature": 0})
    check(status == 200, f"completion: status {status}: {body}")
    return body["choices"][0]["text"] if status == 200 else None


def hf_cache_name_with_tokenizer_and_template(tmp):
    hub = os.path.join(tmp, "hub")
    repo = os.path.join(hub, "models--org--tiny-qwen3")
    commit = "0123456789abcdef0123456789abcdef01234567"
    os.makedirs(os.path.join(repo, "refs"))
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write(commit)
    weights_only(os.path.join(repo, "snapshots", commit))
    server = Server(["org/tiny-qwen3", "--tokenizer", TOKENIZER, "--chat-template", '{{ "Hello" }}',
                     "--max-logprobs", "5", "--return-tokens-as-token-ids", "--dtype", "auto",
                     "--generation-config", "vllm", "--log-level", "info"], tmp,
                    env={"HF_HUB_CACHE": hub})
    try:
        server.wait_ready()
        status, models = server.request("GET", "/v1/models")
        check(status == 200 and [m["id"] for m in models["data"]] == ["org/tiny-qwen3"],
              f"/v1/models: {status} {models}")
        want = golden_prompt_line()["output_text"]
        text = complete(server, "org/tiny-qwen3")
        check(text == want, f"completion of 'Hello': {text!r} != golden {want!r}")
        status, body = server.request("POST", "/v1/chat/completions",
                                      {"model": "org/tiny-qwen3", "max_tokens": 12, "ignore_eos": True, "temperature": 0,
                                       "messages": [{"role": "user", "content": "anything at all"}]})
        check(status == 200, f"chat: status {status}: {body}")
        if status == 200:
            content = body["choices"][0]["message"]["content"]
            check(content == want, f"chat through --chat-template: {content!r} != {want!r}")
        time.sleep(0.8)  # a few stats intervals
        log = server.text()
        lines = [l for l in log.split("\n") if STATS in l]
        check(lines, "no stats line while serving:\n" + log[-2000:])
        check(any("Avg generation throughput: 0.0" not in l for l in lines), f"stats lines show no work: {lines}")
        check(all("Running: " in l and "KV cache usage: " in l for l in lines), f"stats lines: {lines}")
        quiet_after = len([l for l in server.text().split("\n") if STATS in l])
        time.sleep(0.6)  # idle now: no further lines after the one that shows the drop
        check(len([l for l in server.text().split("\n") if STATS in l]) <= quiet_after + 1,
              "stats lines go on while idle")
        check(server.stop() == 0, "SIGTERM: exit status not 0")
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()
        if failures:
            print(f"--- {server.log_path} (tail)\n" + server.text()[-3000:])


def positional_folder_without_stats(tmp):
    folder = weights_only(os.path.join(tmp, "folder-model"))
    server = Server([folder, "--tokenizer", TOKENIZER, "--disable-log-stats"], tmp)
    try:
        server.wait_ready()
        status, models = server.request("GET", "/v1/models")
        check(status == 200 and [m["id"] for m in models["data"]] == [folder], f"/v1/models: {status} {models}")
        check(complete(server, folder) == golden_prompt_line()["output_text"], "folder model: completion")
        time.sleep(0.8)
        check(STATS not in server.text(), "--disable-log-stats: a stats line was logged")
        check(server.stop() == 0, "SIGTERM: exit status not 0")
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()


def main():
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        hf_cache_name_with_tokenizer_and_template(tmp)
        positional_folder_without_stats(tmp)
    print(f"{len(failures)} failures in {time.time() - start:.1f} s")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
