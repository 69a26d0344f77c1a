"""`fullgraph serve`'s HTTP/1.1 parsing and framing against RFC 9112, over raw sockets, with the
built-in model (no --model). Each case names the rule; each failed on the cpp-httplib server that
came before (which accepted malformed heads, closed on a long request line without an answer,
took a half-close for a disconnect, and answered HTTP/1.0 clients in HTTP/1.1 terms).

- Field syntax (5.1): a space in a field name, a field line without a colon: 400.
- Line folding (5.2): an obs-fold continuation line: 400.
- Host (3.2): an HTTP/1.1 request without Host, or with two: 400 (HTTP/1.0 may omit it).
- Target forms (3.2.2): an absolute-form target is served as its path.
- Request line length (3): a request line over the 64 KiB limit: 414 with an OpenAI-shaped body.
- Half-close (9.6): a client that shuts its sending side after a complete request gets its answer.
- HTTP/1.0 (2.3, 6.3, 9.3): answered with an HTTP/1.0 status line, never chunked, streams
  delimited by the close; persistent only when the client asked (Connection: keep-alive).
- Errors: OpenAI-shaped, at most 1 KiB, never the input echoed beyond an excerpt.
- Persistent connections (9.3): after pipelined requests, and after a request whose body grew the
  connection's read buffer, the next requests on the connection arrive intact (the read buffer is
  compacted, or shrunk, only where no read is in flight into it).
"""
import json
import socket
import sys
import time

from http_raw import check, failures, Reader, Server, exchange, post

def openai_error(r, status, label):
    """The response is `status` with an OpenAI error body of at most 1 KiB."""
    body = r.json() if r is not None else None
    error = body.get("error") if isinstance(body, dict) else None
    ok = (r is not None and r.status == status and isinstance(error, dict) and
          set(error) == {"message", "type", "param", "code"} and len(r.body) <= 1024)
    check(ok, f"{label}: want {status} with an OpenAI error body <= 1 KiB, got {r!r}")
    return ok


def field_syntax(port):
    health = b"GET /health HTTP/1.1\r\nHost: x\r\n"
    openai_error(exchange(port, health + b"Bad Name: v\r\n\r\n"), 400, "space in a field name")
    openai_error(exchange(port, health + b"Bad-Name : v\r\n\r\n"), 400, "space before the colon")
    openai_error(exchange(port, health + b"NoColonHere\r\n\r\n"), 400, "field line without a colon")
    openai_error(exchange(port, health + b"X-A: a\r\n  continued\r\n\r\n"), 400, "obs-fold line")
    openai_error(exchange(port, health + b"X-A: a\r\n\tcontinued\r\n\r\n"), 400, "obs-fold line (tab)")
    openai_error(exchange(port, b"GET /health HTTP/1.1\r\n Host: x\r\n\r\n"), 400, "whitespace before the first field")
    openai_error(exchange(port, b"GET /health HTTP/1.1\nHost: x\n\n"), 400, "bare LF line endings")
    r = exchange(port, health + b"\r\n")
    check(r is not None and r.status == 200, f"the well-formed head: {r!r}")


def host_rules(port):
    openai_error(exchange(port, b"GET /health HTTP/1.1\r\n\r\n"), 400, "HTTP/1.1 without Host")
    openai_error(exchange(port, b"GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400, "two Host fields")
    r = exchange(port, b"GET /health HTTP/1.0\r\n\r\n")
    check(r is not None and r.status == 200, f"HTTP/1.0 without Host: {r!r}")
    r = exchange(port, b"GET /health HTTP/2.0\r\nHost: x\r\n\r\n")
    check(r is not None and r.status in (400, 505) and r.json(), f"HTTP/2.0 in an HTTP/1 request line: {r!r}")


def target_forms(port):
    r = exchange(port, post(f"http://127.0.0.1:{port}/v1/completions", {"prompt": "hi", "max_tokens": 3}))
    body = r.json() if r else None
    check(r is not None and r.status == 200 and body and body["usage"]["completion_tokens"] == 3,
          f"absolute-form POST: {r!r}")
    r = exchange(port, b"GET HTTP://LOCALHOST/health?x=1 HTTP/1.1\r\nHost: localhost\r\n\r\n")
    check(r is not None and r.status == 200, f"absolute-form GET with a query: {r!r}")
    r = exchange(port, b"GET /health?probe=1 HTTP/1.1\r\nHost: x\r\n\r\n")
    check(r is not None and r.status == 200, f"origin-form with a query: {r!r}")
    openai_error(exchange(port, b"GET health HTTP/1.1\r\nHost: x\r\n\r\n"), 400, "a target that is no form")


def long_request_line(port):
    line = b"GET /" + b"a" * (70 << 10) + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    r = exchange(port, line, timeout=10)
    openai_error(r, 414, "request line over 64 KiB")
    check(r is None or r.closed, "414: the connection closes after it")
    # Just under the limit, a path that exists nowhere: 404, and still a small body.
    r = exchange(port, b"GET /" + b"b" * (60 << 10) + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    openai_error(r, 404, "60 KiB path: 404")


def half_close(port):
    # Long enough (hundreds of ms) that the answer is still being made when the EOF arrives.
    r = exchange(port, post("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 1500, "ignore_eos": True}),
                 half_close=True, timeout=60)
    body = r.json() if r else None
    check(r is not None and r.status == 200 and body and body["usage"]["completion_tokens"] == 1500,
          f"half-closed non-streamed request: {r!r}")
    r = exchange(port, post("/v1/completions", {"prompt": "hi", "max_tokens": 4, "stream": True, "ignore_eos": True}),
                 half_close=True, timeout=30)
    check(r is not None and r.status == 200 and r.body.endswith(b"data: [DONE]\n\n"),
          f"half-closed streamed request: {r!r}")
    r = exchange(port, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", half_close=True)
    check(r is not None and r.status == 200, f"half-closed GET: {r!r}")


def http10(port):
    r = exchange(port, b"GET /health HTTP/1.0\r\n\r\n")
    check(r is not None and r.version == "HTTP/1.0" and r.status == 200 and r.closed,
          f"HTTP/1.0 GET: an HTTP/1.0 answer, then the close: {r!r}")
    r = exchange(port, post("/v1/completions", {"prompt": "hi", "max_tokens": 3}, version="1.0", host=b""))
    check(r is not None and r.version == "HTTP/1.0" and r.status == 200 and r.header("content-length") and
          not r.header("transfer-encoding") and r.json() and r.closed, f"HTTP/1.0 non-streamed POST: {r!r}")
    r = exchange(port, post("/v1/completions", {"prompt": "hi", "max_tokens": 5, "stream": True, "ignore_eos": True},
                            version="1.0", host=b""), timeout=30)
    events = [e for e in r.body.decode().split("\n\n") if e] if r else []
    check(r is not None and r.version == "HTTP/1.0" and r.status == 200 and not r.header("transfer-encoding") and
          not r.header("content-length") and (r.header("connection") or "").lower() == "close" and r.closed and
          events and events[-1] == "data: [DONE]" and len(events) == 6,
          f"HTTP/1.0 stream: close-delimited, no chunks: {r!r}")
    # Keep-alive only when asked for, and then it holds.
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        reader = Reader(s)
        s.sendall(b"GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        first = reader.response()
        s.sendall(b"GET /v1/models HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        second = reader.response()
        check(first is not None and first.version == "HTTP/1.0" and
              (first.header("connection") or "").lower() == "keep-alive" and not first.closed and
              second is not None and second.status == 200 and second.json(),
              f"HTTP/1.0 keep-alive: {first!r} then {second!r}")


def after_pipelined_requests(port):
    # Two requests in one write: the second waits in the buffer while the first is served, and a
    # read goes out past it. The third, sent once both are answered, must be read as itself.
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        reader = Reader(s)
        for i in range(5):
            s.sendall(post("/v1/completions", {"prompt": "hi", "max_tokens": 1}) +
                      b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            first, second = reader.response(), reader.response()
            s.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
            third = reader.response()
            models = third.json() if third is not None and third.status == 200 else None
            ok = (first is not None and first.status == 200 and second is not None and second.status == 200 and
                  isinstance(models, dict) and models.get("object") == "list")
            check(ok, f"pipelined, round {i}: a completion and /health, then /v1/models: {first!r}, {second!r}, "
                      f"{third!r}")
            if not ok:
                return


def body_after_a_big_body(port):
    big = {"prompt": "hi", "max_tokens": 1, "stop": ["x" * 40_000]}
    # 3 KB: past the 2 KiB an idle connection's buffer holds; the padding is JSON whitespace.
    small = b'{"prompt": "hi", "max_tokens": 1' + b" " * 3000 + b"}"
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        reader = Reader(s)
        for i in range(20):
            s.sendall(post("/v1/completions", big))
            first = reader.response()
            s.sendall(post("/v1/completions", small))
            second = reader.response()
            ok = (first is not None and first.status == 200 and second is not None and second.status == 200 and
                  second.json() and not second.closed)
            check(ok, f"keep-alive, round {i}: a 40 KB body, then a 3 KB one: {first!r} then {second!r}")
            if not ok:
                return


def bounded_errors(port):
    # A 4 MB body that is not JSON (an unterminated string): a small 400.
    big = b'{"prompt": "' + b"x" * 4_000_000
    r = exchange(port, post("/v1/completions", big), timeout=30)
    openai_error(r, 400, "4 MB invalid body")
    check(r is None or b"x" * 1000 not in r.body, "the 4 MB body is not echoed")
    # A field name of 100 KB: the refusal names it, cut short.
    r = exchange(port, post("/v1/completions", {"prompt": "hi", "y" * 100_000: 1}), timeout=30)
    openai_error(r, 400, "100 KB unknown field")
    # Control characters in what is echoed cannot blow the escaped body past 1 KiB.
    r = exchange(port, post("/v1/completions", {"prompt": "hi", "\x01" * 5000: 1}), timeout=30)
    openai_error(r, 400, "control characters in an unknown field")


def main():
    start = time.time()
    server = Server(["--http-read-timeout", "10"])
    try:
        server.wait_ready()
        port = server.port
        for case in (field_syntax, host_rules, target_forms, long_request_line, half_close, http10,
                     after_pipelined_requests, body_after_a_big_body, bounded_errors):
            case(port)
            print(f"{case.__name__}: done ({time.time() - start:.1f} s)", flush=True)
        r = exchange(port, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        check(r is not None and r.status == 200, f"/health after every case: {r!r}")
    finally:
        code = server.stop()
        if failures:
            print("--- server log (tail)\n" + server.log_text()[-4000:])
    check(code == 0, f"exit status {code} after SIGTERM")
    print(f"{len(failures)} failures in {time.time() - start:.1f} s")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
