"""The bad-request table of tests/python/test_server_openai.py: raw HTTP requests to a running
`fullgraph serve`, each with the status and the error's `param` it must get (rows with 200:
requests once refused, now served), error bodies short and saying where a JSON syntax error is,
and /health still 200 after all of them. raw_request is also the main test's way to send bytes
the openai client would not.
"""
import json
import re
import socket

from serve_process import check


def raw_request(port, data, timeout=10):
    """Sends raw bytes; returns (status, parsed JSON body or None)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        buf = b""
        while True:
            try:
                part = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not part:
                break
            buf += part
            head, sep, body = buf.partition(b"\r\n\r\n")
            m = re.search(rb"Content-Length: (\d+)", head)
            if sep and m and len(body) >= int(m.group(1)):
                break
    head, _, body = buf.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1]) if head.startswith(b"HTTP/1.1") else None
    try:
        return status, json.loads(body)
    except ValueError:
        return status, None


def bad_requests(server):
    ok_msg = [{"role": "user", "content": "hi"}]
    C, CH = "/v1/completions", "/v1/chat/completions"
    table = [
        # (path, body, status, param)
        (C, "not json", 400, None),
        (C, "[1, 2]", 400, None),
        (C, '"a string"', 400, None),
        (C, '{"prompt": ' + "[" * 70 + "]" * 70 + "}", 400, None),
        (C, {"prompt": "hi", "temperature": float("nan")}, 400, None),  # NaN is not JSON
        (C, {}, 400, "prompt"),
        (C, {"prompt": ""}, 400, "prompt"),
        (C, {"prompt": []}, 400, "prompt"),
        (C, {"prompt": 5}, 400, "prompt"),
        (C, {"prompt": [1, -1]}, 400, "prompt"),
        (C, {"prompt": [1, 32000]}, 400, "prompt"),
        (C, {"prompt": [1, 2.5]}, 400, "prompt"),
        (C, {"prompt": ["a", "b"]}, 400, "prompt"),
        (C, {"prompt": "x " * 3000}, 400, "prompt"),
        (C, {"prompt": "hi", "max_tokens": 0}, 400, "max_tokens"),
        (C, {"prompt": "hi", "max_tokens": -5}, 400, "max_tokens"),
        (C, {"prompt": "hi", "max_tokens": "10"}, 400, "max_tokens"),
        (C, {"prompt": "hi", "max_tokens": 1e300}, 400, "max_tokens"),
        (C, {"prompt": "hi", "max_tokens": 5000}, 400, "max_tokens"),
        (C, {"prompt": "hi", "max_tokens": 2 ** 70}, 400, "max_tokens"),
        (C, {"prompt": "hi", "temperature": -1}, 400, "temperature"),
        (C, {"prompt": "hi", "temperature": "hot"}, 400, "temperature"),
        (C, {"prompt": "hi", "temperature": 1e308}, 400, "temperature"),
        (C, {"prompt": "hi", "top_p": 0}, 400, "top_p"),
        (C, {"prompt": "hi", "top_p": 1.5}, 400, "top_p"),
        (C, {"prompt": "hi", "top_k": -2}, 400, "top_k"),
        (C, {"prompt": "hi", "min_p": 2}, 400, "min_p"),
        (C, {"prompt": "hi", "presence_penalty": 3}, 400, "presence_penalty"),
        (C, {"prompt": "hi", "frequency_penalty": -2.5}, 400, "frequency_penalty"),
        (C, {"prompt": "hi", "repetition_penalty": 0}, 400, "repetition_penalty"),
        (C, {"prompt": "hi", "n": 0}, 400, "n"),
        (C, {"prompt": "hi", "n": 17}, 400, "n"),
        (C, {"prompt": "hi", "logprobs": 21}, 400, "logprobs"),
        (C, {"prompt": "hi", "logprobs": True}, 400, "logprobs"),
        (C, {"prompt": "hi", "stop": ["a"] * 17}, 400, "stop"),
        (C, {"prompt": "hi", "stop": [""]}, 400, "stop"),
        (C, {"prompt": "hi", "stop": 5}, 400, "stop"),
        (C, {"prompt": "hi", "stop_token_ids": [40000]}, 400, "stop_token_ids"),
        (C, {"prompt": "hi", "seed": "x"}, 400, "seed"),
        (C, {"prompt": "hi", "seed": 1.5}, 400, "seed"),
        (C, {"prompt": "hi", "min_tokens": 10, "max_tokens": 5}, 400, "min_tokens"),
        (C, {"prompt": "hi", "ignore_eos": 1}, 400, "ignore_eos"),
        (C, {"prompt": "hi", "echo": True, "max_tokens": 1}, 200, None),  # was 400 "echo": echo is implemented
        (C, {"prompt": "hi", "echo": "yes"}, 400, "echo"),
        (C, {"prompt": "hi", "best_of": 3}, 400, "best_of"),
        (C, {"prompt": "hi", "suffix": "x"}, 400, "suffix"),
        (C, {"prompt": "hi", "logit_bias": {"5": 1}, "max_tokens": 1}, 200, None),  # was 400: logit_bias is parsed
        (C, {"prompt": "hi", "logit_bias": {"5": 101}}, 400, "logit_bias"),
        (C, {"prompt": "hi", "logit_bias": {"32000": 1}}, 400, "logit_bias"),
        (C, {"prompt": "hi", "logit_bias": {"five": 1}}, 400, "logit_bias"),
        # Fields OpenAI's and vLLM's clients send that change nothing we return: accepted (logged once).
        (C, {"prompt": "hi", "max_tokens": 1, "store": False, "metadata": {"a": "b"}, "service_tier": "auto",
             "user": "u", "reasoning_effort": "low", "modalities": ["text"], "prompt_cache_key": "k",
             "safety_identifier": "s", "request_id": "req-1", "priority": 0}, 200, None),
        (C, {"prompt": "hi", "store": "yes"}, 400, "store"),
        (C, {"prompt": "hi", "modalities": ["audio"]}, 400, "modalities"),
        (C, {"prompt": "hi", "request_id": ""}, 400, "request_id"),
        (C, {"prompt": "hi", "priority": "high"}, 400, "priority"),
        (C, {"prompt": "hi", "priority": 1}, 400, "priority"),  # this server schedules first come, first served
        (C, {"prompt": "hi", "prompt_logprobs": 21}, 400, "prompt_logprobs"),
        (C, {"prompt": "hi", "truncate_prompt_tokens": 0}, 400, "truncate_prompt_tokens"),
        (C, {"prompt": "hi", "truncate_prompt_tokens": 5000}, 400, "truncate_prompt_tokens"),
        (C, {"prompt": "x " * 3000, "truncate_prompt_tokens": 100, "max_tokens": 1}, 200, None),
        (C, {"prompt": "hi", "add_special_tokens": 1}, 400, "add_special_tokens"),
        (C, {"prompt": "hi", "stream": True, "stream_options": {"continuous_usage_stats": "x"}}, 400,
         "stream_options.continuous_usage_stats"),
        (C, {"prompt": "hi", "foo": 1}, 400, "foo"),
        (C, {"prompt": "hi", "stream": "yes"}, 400, "stream"),
        (C, {"prompt": "hi", "stream_options": {"include_usage": True}}, 400, "stream_options"),
        (C, {"prompt": "hi", "user": 5}, 400, "user"),
        (C, {"prompt": "hi", "model": "gpt-4"}, 404, "model"),
        (C, {"messages": ok_msg}, 400, "messages"),
        (CH, {}, 400, "messages"),
        (CH, {"messages": []}, 400, "messages"),
        (CH, {"messages": "hi"}, 400, "messages"),
        (CH, {"messages": [{"role": "wizard", "content": "x"}]}, 400, "messages[0].role"),
        (CH, {"messages": [{"role": "function", "content": "x"}]}, 400, "messages[0].role"),
        (CH, {"messages": [{"role": "user"}]}, 400, "messages[0].content"),
        (CH, {"messages": [{"role": "user", "content": 5}]}, 400, "messages[0].content"),
        (CH, {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}, 400,
         "messages[0].content[0].type"),
        (CH, {"messages": [{"role": "user", "content": "x", "tool_calls": [{}]}]}, 400, "messages[0].tool_calls"),
        # tools with tool_choice omitted mean "auto", which needs --enable-auto-tool-choice (vLLM's rule).
        (CH, {"messages": ok_msg, "tools": [{"type": "function", "function": {"name": "f"}}]}, 400, "tool_choice"),
        (CH, {"messages": ok_msg, "tool_choice": "required"}, 400, "tool_choice"),
        (CH, {"messages": ok_msg, "functions": [{"name": "f"}]}, 400, "functions"),
        # Constraints are served on both endpoints (structured outputs); bad ones name their field.
        (C, {"prompt": "hi", "response_format": {"type": "json_object"}, "max_tokens": 4}, 200, None),
        (C, {"prompt": "hi", "guided_regex": "[a-z]+", "max_tokens": 4}, 200, None),
        (C, {"prompt": "hi", "guided_regex": "[a-"}, 400, "guided_regex"),
        (CH, {"messages": ok_msg, "top_logprobs": 3}, 400, "top_logprobs"),
        (CH, {"messages": ok_msg, "logprobs": True, "top_logprobs": 50}, 400, "top_logprobs"),
        (CH, {"messages": ok_msg, "prompt": "x"}, 400, "prompt"),
        (CH, {"messages": ok_msg, "continue_final_message": True, "add_generation_prompt": True}, 400,
         "continue_final_message"),
        (CH, {"messages": ok_msg}, 400, "messages"),  # this model has no chat template
    ]
    for path, body, status, param in table:
        data = body if isinstance(body, str) else json.dumps(body)
        got, raw, resp = server.request("POST", path, body=data.encode(), headers={"Content-Type": "application/json"})
        if status == 200:  # a request this table once refused, now served
            check(got == 200 and "choices" in json.loads(raw),
                  f"accepted request {data[:80]!r}: got {got} {raw[:200]!r}")
            continue
        try:
            error = json.loads(raw)["error"]
            shaped = set(error) == {"message", "type", "param", "code"} and isinstance(error["message"], str)
        except (ValueError, KeyError, TypeError):
            error, shaped = {}, False
        check(got == status and shaped and error.get("param") == param,
              f"bad request {path} {data[:80]!r}: got {got} {raw[:200]!r}, want {status} param {param!r}")
    count = len(table)

    # Error bodies: a syntax error says where in our words; a huge bad value comes back as an excerpt.
    got, raw, _ = server.request("POST", C, body=b'{"prompt": tru}')
    message = json.loads(raw)["error"]["message"]
    check(got == 400 and "offset 14" in message and "json.exception" not in message, f"syntax error: {message}")
    huge = json.dumps({"prompt": "hi", "max_tokens": "z" * (1 << 20)}).encode()
    got, raw, _ = server.request("POST", C, body=huge)
    error = json.loads(raw)["error"]
    check(got == 400 and error["param"] == "max_tokens" and len(error["message"]) <= 1024 and "zzz" in error["message"],
          f"huge bad value: {got}, a message of {len(error['message'])} characters")
    count += 2

    def http_case(label, status, got, body):
        check(got == status and body is not None and "error" in body, f"{label}: got {got} {body}, want {status}")

    got, raw, resp = server.request("GET", C)
    http_case("GET /v1/completions", 405, got, json.loads(raw))
    check(resp.getheader("Allow") == "POST", "405 names the allowed method")
    got, raw, _ = server.request("POST", "/v1/models", body=b"{}")
    http_case("POST /v1/models", 405, got, json.loads(raw))
    got, raw, _ = server.request("GET", "/nope")
    http_case("GET /nope", 404, got, json.loads(raw))
    port = server.port
    http_case("chunked body", 411, *raw_request(port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                                                      b"Transfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n0\r\n\r\n"))
    http_case("no Content-Length", 411, *raw_request(port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n"))
    http_case("body too large", 413, *raw_request(port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                                                        b"Content-Length: 5242880\r\n\r\n"))
    http_case("bad Content-Length", 400, *raw_request(port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                                                            b"Content-Length: abc\r\n\r\n"))
    big = b"".join(b"X-Filler-%d: %s\r\n" % (i, b"y" * 1000) for i in range(80))
    http_case("headers too large", 431, *raw_request(port, b"GET /health HTTP/1.1\r\nHost: x\r\n" + big + b"\r\n"))
    http_case("garbage request line", 400, *raw_request(port, b"HELLO\r\n\r\n"))
    count += 9
    status, _, _ = server.request("GET", "/health")
    check(status == 200, f"/health after {count} bad requests: {status}")
    print(f"bad requests: {count} cases", flush=True)
    return count
