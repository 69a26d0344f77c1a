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
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

BINARY = os.environ["FULLGRAPH_BINARY"]
TESTDATA = os.environ["FULLGRAPH_TESTDATA"]
E2E = os.path.join(TESTDATA, "e2e", "tiny-qwen3tok")
TOKENIZER = os.path.join(TESTDATA, "tokenizers", "qwen3")
STATS = "Avg prompt throughput:"

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return cond


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def weights_only(path):
    """The e2e model's config and weights, without tokenizer files."""
    os.makedirs(path)
    for name in ("config.json", "model.safetensors"):
        os.symlink(os.path.join(E2E, name), os.path.join(path, name))
    return path


class Server:
    def __init__(self, args, tmp, env=None):
        self.port = free_port()
        self.log_path = os.path.join(tmp, f"server-{self.port}.log")
        self.log = open(self.log_path, "w")
        full_env = dict(os.environ, FULLGRAPH_LOG_STATS_INTERVAL="0.2", **(env or {}))
        self.proc = subprocess.Popen([BINARY, "serve", *args, "--port", str(self.port), "--rope-inv-freq-bf16"],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=full_env)

    def request(self, method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request(method, path, body=json.dumps(body) if body is not None else None,
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read() or b"null")
        finally:
            conn.close()

    def wait_ready(self, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                sys.exit(f"the server exited with {self.proc.returncode}: " + self.text())
            try:
                if self.request("GET", "/health")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        sys.exit("the server did not become healthy: " + self.text())

    def text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = "timeout"
        self.log.close()
        return code


def golden_prompt_line():
    with open(os.path.join(E2E, "e2e_golden.jsonl"), encoding="utf-8") as f:
        return json.loads(f.readline())


def complete(server, model):
    status, body = server.request("POST", "/v1/completions",
                                  {"model": model, "prompt": "Hello", "max_tokens": 12, "ignore_eos": True})
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
                                      {"model": "org/tiny-qwen3", "max_tokens": 12, "ignore_eos": True,
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
