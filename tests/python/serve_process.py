"""What the Python tests of `fullgraph serve` share: a check list, a free port, and a server
process with its log (started by the test, stopped with SIGTERM, its JSON endpoints called
through http.client)."""
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time

BINARY = os.environ["FULLGRAPH_BINARY"]
TESTDATA = os.environ["FULLGRAPH_TESTDATA"]
# Without --model the binary runs $FULLGRAPH_DEFAULT_MODEL, else the trained model scripts/setup.sh
# puts into models/; a test that gives no --model means the built-in tiny model (ctest sets this
# too; it is set here for a test run by hand), and every process a test starts inherits it.
os.environ.setdefault("FULLGRAPH_DEFAULT_MODEL", "builtin")

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return cond


def model_folder(tmp, e2e, tokenizer):
    """A checkpoint folder in `tmp`: the e2e model's files plus a fixture tokenizer's, as symlinks."""
    path = os.path.join(tmp, e2e)
    os.makedirs(path)
    for name in ("config.json", "generation_config.json", "model.safetensors"):
        os.symlink(os.path.join(TESTDATA, "e2e", e2e, name), os.path.join(path, name))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        os.symlink(os.path.join(TESTDATA, "tokenizers", tokenizer, name), os.path.join(path, name))
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`fullgraph serve ARGS --port P`, its output in TMP/server-P.log."""

    def __init__(self, args, tmp, env=None):
        self.port = free_port()
        self.log_path = os.path.join(tmp, f"server-{self.port}.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([BINARY, "serve", *args, "--port", str(self.port)], stdout=self.log,
                                     stderr=subprocess.STDOUT, env=dict(os.environ, **(env or {})))

    def request(self, method, path, body=None, headers=None):
        """(status, the JSON body or None, the response's headers)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request(method, path, body=json.dumps(body) if body is not None else None,
                         headers={"Content-Type": "application/json", **(headers or {})})
            resp = conn.getresponse()
            raw = resp.read()
            try:
                data = json.loads(raw or b"null")
            except ValueError:
                data = None
            return resp.status, data, dict(resp.getheaders())
        finally:
            conn.close()

    def request_raw(self, method, path, body):
        """(status, the raw body, the response's headers) for a body sent as given."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            return resp.status, resp.read(), dict(resp.getheaders())
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
