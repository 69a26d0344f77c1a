"""`fullgraph serve`'s HTTP layer beyond parsing, with the built-in model (no --model):

- curl, --http1.0 and --http1.1, over HTTP and HTTPS: a completion and a stream (HTTP/1.0: an
  HTTP/1.0 status line, no chunking, the stream ended by the close).
- TLS (--ssl-keyfile/--ssl-certfile): /health, a streamed and a non-streamed completion through
  the `openai` client over HTTPS; plain HTTP on the TLS port gets no answer; a client that never
  finishes its handshake is closed after the read timeout.
- CORS (--allowed-origins): preflights answered 204 with the CORS headers for allowed origins
  only; answers carry Access-Control-Allow-Origin for allowed origins only; without the flag,
  OPTIONS is 204 with Allow and no CORS header.
- --root-path: routes are served under the prefix too.
- Access log and request ids: one line per request with method, path, status, tokens, time to
  first token, duration and request id; the client's X-Request-Id is echoed, or one is made;
  --disable-log-requests silences the lines.
- Expect: 100-continue, pipelined requests answered in order, the keep-alive timeout.
- The connection cap (--max-connections): at the cap the oldest idle connection is closed for a
  new one; when every connection is busy a new one gets 503.
"""
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import time

import httpx
import openai

from http_raw import check, failures, Reader, Server, exchange, post

def make_cert(tmp):
    key, cert = os.path.join(tmp, "key.pem"), os.path.join(tmp, "cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days",
                    "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return key, cert


def curl_checks(base_url, extra=()):
    """A completion and a stream through curl, in HTTP/1.0 and 1.1."""
    for version in ("--http1.0", "--http1.1"):
        for stream in (False, True):
            body = json.dumps({"prompt": "hi", "max_tokens": 4, "ignore_eos": True, "stream": stream})
            proc = subprocess.run(["curl", "-sS", "-i", "-N", version, *extra, "-H", "Content-Type: application/json",
                                   "-d", body, f"{base_url}/v1/completions"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, timeout=60, check=False)
            label = f"curl {version} {'stream' if stream else 'whole'} {base_url}"
            head, _, payload = proc.stdout.partition(b"\r\n\r\n")
            status_line = head.split(b"\r\n")[0]
            want = b"HTTP/1.0 200" if version == "--http1.0" else b"HTTP/1.1 200"
            if not check(proc.returncode == 0 and status_line.startswith(want),
                         f"{label}: exit {proc.returncode}, {status_line!r}, {proc.stderr[-200:]!r}"):
                continue
            chunked = b"transfer-encoding: chunked" in head.lower()
            check(chunked == (stream and version == "--http1.1"), f"{label}: chunked is {chunked}")
            if stream:
                check(payload.rstrip().endswith(b"data: [DONE]") and payload.count(b"data: {") == 4,
                      f"{label}: {payload[-200:]!r}")
            else:
                check(json.loads(payload)["usage"]["completion_tokens"] == 4, f"{label}: {payload[:200]!r}")


def tls_checks(tmp):
    key, cert = make_cert(tmp)
    server = Server(["--ssl-keyfile", key, "--ssl-certfile", cert, "--http-read-timeout", "2",
                     "--allowed-origins", "https://x.example, https://y.example"])
    context = ssl.create_default_context(cafile=cert)
    try:
        server.wait_ready(tls_context=context)
        r = exchange(server.port, b"GET /health HTTP/1.1\r\nHost: localhost\r\nOrigin: https://y.example\r\n\r\n",
                     tls_context=context)
        check(r is not None and r.status == 200 and r.header("access-control-allow-origin") == "https://y.example",
              f"TLS /health (with a comma-list CORS origin): {r!r}")
        client = openai.OpenAI(base_url=f"https://localhost:{server.port}/v1", api_key="none", max_retries=0,
                               http_client=httpx.Client(verify=context, timeout=60))
        resp = client.completions.create(model="fullgraph-builtin", prompt="hi", max_tokens=4,
                                         extra_body={"ignore_eos": True})
        check(resp.usage.completion_tokens == 4, f"TLS completion: {resp}")
        chunks = list(client.completions.create(model="fullgraph-builtin", prompt="hi", max_tokens=4, stream=True,
                                                extra_body={"ignore_eos": True}))
        check(len(chunks) == 4 and len({c.id for c in chunks}) == 1, f"TLS stream: {len(chunks)} chunks")
        curl_checks(f"https://localhost:{server.port}", ["--cacert", cert])
        # Plain HTTP on the TLS port: the handshake fails, no HTTP answer.
        r = exchange(server.port, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", timeout=5)
        check(r is None, f"plain HTTP on the TLS port answered: {r!r}")
        # A client that connects and never starts the handshake: closed at the read deadline.
        start = time.time()
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            data = s.recv(100)
        waited = time.time() - start
        check(data == b"" and 1.5 < waited < 6, f"silent TLS client: closed after {waited:.1f} s, want ~2 s")
    finally:
        check(server.stop() == 0, "TLS server: exit status after SIGTERM")


def cors_root_log_checks():
    server = Server(["--allowed-origins", '["https://a.example"]', "--root-path", "/api/"])
    bare = Server(["--disable-log-requests"])
    try:
        server.wait_ready()
        bare.wait_ready()
        curl_checks(f"http://127.0.0.1:{bare.port}")
        port = server.port
        pre = (b"OPTIONS /v1/completions HTTP/1.1\r\nHost: x\r\nOrigin: %s\r\nAccess-Control-Request-Method: POST\r\n"
               b"Access-Control-Request-Headers: authorization, content-type\r\n\r\n")
        r = exchange(port, pre % b"https://a.example")
        check(r is not None and r.status == 204 and r.header("access-control-allow-origin") == "https://a.example" and
              "POST" in (r.header("access-control-allow-methods") or "") and
              r.header("access-control-allow-headers") == "authorization, content-type" and
              r.header("access-control-max-age"), f"preflight from an allowed origin: {r!r}")
        r = exchange(port, pre % b"https://evil.example")
        check(r is not None and r.status == 204 and r.header("access-control-allow-origin") is None,
              f"preflight from another origin: {r!r}")
        r = exchange(port, b"GET /v1/models HTTP/1.1\r\nHost: x\r\nOrigin: https://a.example\r\n\r\n")
        check(r is not None and r.status == 200 and r.header("access-control-allow-origin") == "https://a.example" and
              r.header("vary") == "Origin", f"answer to an allowed origin: {r!r}")
        r = exchange(port, b"GET /v1/models HTTP/1.1\r\nHost: x\r\nOrigin: https://evil.example\r\n\r\n")
        check(r is not None and r.status == 200 and r.header("access-control-allow-origin") is None,
              f"answer to another origin: {r!r}")
        r = exchange(bare.port, pre % b"https://a.example")
        check(r is not None and r.status == 204 and r.header("allow") == "POST, OPTIONS" and
              r.header("access-control-allow-origin") is None, f"OPTIONS without --allowed-origins: {r!r}")

        # --root-path /api/ (the trailing slash dropped): both spellings serve.
        for path, want in (("/api/health", 200), ("/health", 200), ("/api", 404), ("/apix/health", 404)):
            r = exchange(port, b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode())
            check(r is not None and r.status == want, f"root path: GET {path}: {r!r}, want {want}")
        r = exchange(port, post("/api/v1/completions", {"prompt": "hi", "max_tokens": 3, "ignore_eos": True},
                                headers=b"X-Request-Id: my-id-123\r\n"))
        check(r is not None and r.status == 200 and r.header("x-request-id") == "my-id-123",
              f"POST under the root path, X-Request-Id echoed: {r!r}")
        r = exchange(port, post("/v1/completions", {"prompt": "hi", "max_tokens": 2, "stream": True}))
        made = r.header("x-request-id") if r else None
        check(made is not None and re.fullmatch(r"[0-9a-f]{32}", made), f"a request id is made: {r!r}")
        exchange(bare.port, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")

        time.sleep(0.3)
        log = server.log_text()
        check(re.search(r'"POST /v1/completions HTTP/1\.1" 200 prompt_tokens=\d+ completion_tokens=3 '
                        r'ttft=[0-9.]+s duration=[0-9.]+s request_id=my-id-123', log),
              "access log: the line of the non-streamed request")
        check(re.search(r'"POST /v1/completions HTTP/1\.1" 200 prompt_tokens=\d+ completion_tokens=2 '
                        r'ttft=[0-9.]+s duration=[0-9.]+s request_id=' + str(made), log),
              "access log: the line of the streamed request")
        check(re.search(r'"OPTIONS /v1/completions HTTP/1\.1" 204 duration=', log), "access log: the preflight")
        check('"GET /health' not in bare.log_text(), "--disable-log-requests still logs requests")
    finally:
        server.stop()
        bare.stop()


def connection_checks():
    server = Server(["--max-connections", "4", "--keep-alive-timeout", "1", "--disable-log-requests"])
    try:
        server.wait_ready()
        port = server.port
        time.sleep(1.0)  # the readiness probes' connections have closed
        # Expect: 100-continue: the interim answer, then the real one once the body is sent.
        body = json.dumps({"prompt": "hi", "max_tokens": 2}).encode()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n"
                      % len(body))
            interim = s.recv(100)
            s.sendall(body)
            r = Reader(s).response()
            check(interim == b"HTTP/1.1 100 Continue\r\n\r\n" and r is not None and r.status == 200,
                  f"100-continue: {interim!r} then {r!r}")
        # Two pipelined requests: two answers, in order; then the keep-alive timeout closes it.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            reader = Reader(s)
            first, second = reader.response(), reader.response()
            check(first is not None and first.json() and second is not None and second.status == 200 and
                  second.body == b"", f"pipelined: {first!r}, {second!r}")
            start = time.time()
            closed = s.recv(10) == b""
            check(closed and 0.5 < time.time() - start < 5, f"keep-alive timeout: closed after {time.time() - start:.1f} s")
        time.sleep(1.0)  # the connections above have closed

        # The cap, every slot busy (a request under way on each, its head read: the server said
        # 100 Continue): a new connection gets 503.
        busy = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(4)]
        body = json.dumps({"prompt": "hi", "max_tokens": 1}).encode()
        for s in busy:
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body))
        for s in busy:
            check(s.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n", "at the cap: a busy connection's 100 Continue")
        r = exchange(port, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        check(r is not None and r.status == 503 and r.json()["error"]["code"] == "server_busy" and r.closed,
              f"every connection busy: {r!r}")
        for s in busy:
            s.sendall(body)
            r = Reader(s).response()
            check(r is not None and r.status == 200, f"the busy connections are served: {r!r}")
            s.close()
        time.sleep(1.0)  # the connections above have closed

        # The cap with four idle connections, oldest first: a fifth makes the oldest go.
        idle = []
        for _ in range(4):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            time.sleep(0.2)
        r = exchange(port, b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        check(r is not None and r.status == 200, f"at the cap with idle connections: {r!r}")
        check(idle[0].recv(10) == b"", "at the cap: the oldest idle connection was not closed")
        for s in idle[1:]:
            s.setblocking(False)
            try:
                gone = s.recv(10) == b""
            except BlockingIOError:
                gone = False
            check(not gone, "at the cap: a younger idle connection was closed")
        for s in idle:
            s.close()
    finally:
        server.stop()


def main():
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        tls_checks(tmp)
        print(f"TLS checked ({time.time() - start:.1f} s)", flush=True)
    cors_root_log_checks()
    print(f"CORS, root path, access log checked ({time.time() - start:.1f} s)", flush=True)
    connection_checks()
    print(f"{len(failures)} failures in {time.time() - start:.1f} s")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
