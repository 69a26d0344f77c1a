"""Raw HTTP/1.x over sockets for the server tests: start `fullgraph serve` (built-in model unless
told otherwise), send exact bytes, and read one response the way RFC 9112 frames it
(Content-Length, chunked, or up to the close), keeping what a client library would hide: the
status line's version, every header, whether the server closed. Also the tests' check().
"""
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time

from serve_process import BINARY, check, failures, free_port  # noqa: F401 (re-exported to the tests)

class Response:
    def __init__(self, version, status, headers, body, closed):
        self.version = version  # "HTTP/1.1"
        self.status = status
        self.headers = headers  # [(lower-case name, value)]
        self.body = body
        self.closed = closed  # the server closed the connection after it

    def header(self, name):
        for k, v in self.headers:
            if k == name.lower():
                return v
        return None

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def __repr__(self):
        return f"<{self.version} {self.status} {self.headers} {self.body[:200]!r} closed={self.closed}>"


class Reader:
    """Reads responses from a socket; bytes past one response stay for the next."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.eof = False

    def _more(self):
        if self.eof:
            return False
        try:
            part = self.sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            part = b""
        if not part:
            self.eof = True
            return False
        self.buf += part
        return True

    def _take_line(self):
        while b"\r\n" not in self.buf:
            if not self._more():
                return None
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def _take(self, n):
        while len(self.buf) < n:
            if not self._more():
                break
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def response(self, head_request=False):
        """One response, or None when the server closed without (a complete) one."""
        while True:
            line = self._take_line()
            if line is None:
                return None
            version, status = line.split(b" ", 2)[:2]
            headers = []
            while True:
                h = self._take_line()
                if h is None:
                    return None
                if h == b"":
                    break
                name, _, value = h.partition(b":")
                headers.append((name.decode().strip().lower(), value.decode().strip()))
            status = int(status)
            if not 100 <= status < 200:
                break  # a 1xx is followed by the real answer
        names = dict(headers)
        body = b""
        if head_request or status in (204, 304):
            pass
        elif "transfer-encoding" in names:
            while True:
                size = self._take_line()
                if size is None:
                    return None
                size = int(size.split(b";")[0], 16)
                if size == 0:
                    self._take_line()
                    break
                body += self._take(size)
                self._take_line()
        elif "content-length" in names:
            body = self._take(int(names["content-length"]))
        else:
            while self._more():
                pass
            body, self.buf = self.buf, b""
        closed = self.eof
        if not closed and names.get("connection", "").lower() == "close":
            self.sock.settimeout(2)
            try:
                closed = not self._more()
            except socket.timeout:
                closed = False
        return Response(version.decode(), status, headers, body, closed)


def exchange(port, data, timeout=10, half_close=False, tls_context=None, head_request=False):
    """Sends `data` on a fresh connection and reads one response."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    if tls_context is not None:
        sock = tls_context.wrap_socket(sock, server_hostname="localhost")
    with sock:
        sock.sendall(data)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        return Reader(sock).response(head_request=head_request)


class Server:
    """`fullgraph serve` on a free port with the built-in model (no --model) unless `args` says."""

    def __init__(self, args=()):
        self.port = free_port()
        self.tmp = tempfile.mkdtemp(prefix="fg-http-")
        self.log_path = os.path.join(self.tmp, "server.log")
        self.log = open(self.log_path, "w")
        cmd = [BINARY, "serve", "--port", str(self.port), *args]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout=120, tls_context=None):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                sys.exit(f"the server exited with {self.proc.returncode}: " + open(self.log_path).read())
            try:
                r = exchange(self.port, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", timeout=5, tls_context=tls_context)
                if r is not None and r.status == 200:
                    return
            except (OSError, ssl.SSLError, ValueError):
                pass
            time.sleep(0.05)
        sys.exit("the server did not become healthy: " + open(self.log_path).read())

    def log_text(self):
        if not self.log.closed:
            self.log.flush()
        return open(self.log_path, errors="replace").read()

    def stop(self, sig=None, timeout=30):
        if self.proc.poll() is None:
            self.proc.terminate() if sig is None else self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


def post(path, body, version="1.1", headers=b"", host=b"Host: x\r\n"):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return (b"POST %s HTTP/%s\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n"
            % (path.encode(), version.encode(), host, len(data), headers)) + data
