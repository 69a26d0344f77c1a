"""Tool calling and reasoning through `fullgraph serve`, with the official `openai` client, on the two
e2e fixture models (random weights: only the grammar makes their calls parse):

- Qwen3 (its own chat template, which renders tools; --tool-call-parser hermes) and Llama-2 (a
  small template of the test's that renders tools and tool messages; --tool-call-parser
  llama3_json), each with --enable-auto-tool-choice.
- tool_choice "required" and a named function: finish_reason "tool_calls", every call names a tool
  and its arguments validate against that tool's parameters (jsonschema); streamed with the same
  seed, the name comes first and the argument pieces join to exactly the whole answer's arguments.
- tool_choice auto and none: an answer (content or calls) in the right shape.
- The conversation round-trips: the assistant's tool_calls and a tool message go back through the
  template and get an answer.
- --reasoning-parser qwen3: a required call with chat_template_kwargs {"enable_thinking": false}
  is constrained from the first token; with thinking on, the text before </think> (none, from a
  random model) would be reasoning_content.
- A large schema compiles off the I/O threads: with one I/O thread, /health answers at once while
  the schema compiles.
- Bad tools, tool choices and constraints (a ~1 MB schema, a regex that does not compile, a grammar
  with an undefined rule, a dangling $ref, an empty choice list, a body nested 10,000 deep) are 400s
  naming the field, and the server stays healthy.
"""
import json
import os
import sys
import tempfile

import httpx
import jsonschema
import openai

from serve_process import Server, check, failures, model_folder

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "maxLength": 8}, "unit": {"enum": ["c", "f"]}},
            "required": ["city", "unit"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "add", "parameters": {"type": "object", "properties": {
            "a": {"type": "integer", "minimum": 0, "maximum": 9}, "b": {"type": "integer", "minimum": 0, "maximum": 9}},
            "required": ["a", "b"], "additionalProperties": False}}},
]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]

LLAMA_TEMPLATE = (
    "{{ bos_token }}{% if tools %}Tools: {{ tools | tojson }}\n{% endif %}"
    "{% for m in messages %}{{ m.role }}: "
    "{% if m.tool_calls %}{% for c in m.tool_calls %}{{ {'name': c.function.name, 'parameters': c.function.arguments}"
    " | tojson }}{% endfor %}{% else %}{{ m.content }}{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}")


def client_of(server):
    return openai.OpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="none", max_retries=0,
                         http_client=httpx.Client(timeout=120))


def check_calls(label, calls, names):
    ok = bool(calls)
    for c in calls or []:
        try:
            ok = ok and c.function.name in names
            jsonschema.validate(json.loads(c.function.arguments), SCHEMAS[c.function.name])
        except (ValueError, KeyError, jsonschema.ValidationError) as e:
            ok = False
            print(f"{label}: {c.function.name} {c.function.arguments!r}: {e}", flush=True)
    check(ok, f"{label}: calls {[(c.function.name, c.function.arguments) for c in calls or []]}")


def streamed_calls(client, **kwargs):
    """Joins a stream's tool-call deltas: [(id, name, arguments)], the finish reason, and whether each
    call's first piece carried its name."""
    calls, finish, names_first = {}, None, True
    for chunk in client.chat.completions.create(stream=True, **kwargs):
        choice = chunk.choices[0]
        finish = choice.finish_reason or finish
        for d in choice.delta.tool_calls or []:
            if d.index not in calls:
                names_first = names_first and bool(d.id) and bool(d.function and d.function.name)
                calls[d.index] = [d.id, d.function.name, ""]
            calls[d.index][2] += (d.function.arguments or "") if d.function else ""
    return [tuple(calls[i]) for i in sorted(calls)], finish, names_first


def tool_checks(server, model, reasoning_off=None):
    client = client_of(server)
    extra = {"chat_template_kwargs": {"enable_thinking": False}} if reasoning_off else {}
    cases = [("required", "required", {"get_weather", "add"}),
             ("named", {"type": "function", "function": {"name": "add"}}, {"add"})]
    for label, choice, names in cases:
        for seed in (1, 2, 3):
            # One call per answer but for the last seed: a random model may go on adding calls to the
            # array of "required" past max_tokens.
            args = dict(model=model, messages=MESSAGES, tools=TOOLS, tool_choice=choice, max_tokens=400,
                        temperature=1.0, seed=seed, parallel_tool_calls=seed == 3, extra_body=extra)
            whole = client.chat.completions.create(**args)
            c = whole.choices[0]
            if seed == 3 and c.finish_reason == "length":
                continue  # parallel calls that ran out of tokens: nothing to compare
            check(c.finish_reason == "tool_calls", f"{model} {label} seed {seed}: finish {c.finish_reason}")
            check_calls(f"{model} {label} seed {seed}", c.message.tool_calls, names)
            calls, finish, names_first = streamed_calls(client, **args)
            want = [(t.id, t.function.name, t.function.arguments) for t in c.message.tool_calls or []]
            check([(n, a) for _, n, a in calls] == [(n, a) for _, n, a in want] and finish == "tool_calls"
                  and names_first, f"{model} {label} seed {seed}: streamed {calls} {finish} against {want}")
    # auto and none: an answer of either kind.
    for choice in ("auto", "none"):
        r = client.chat.completions.create(model=model, messages=MESSAGES, tools=TOOLS, tool_choice=choice,
                                           max_tokens=16, temperature=1.0, seed=5, extra_body=extra)
        c = r.choices[0]
        check((c.message.content is not None or c.message.tool_calls) and
              (choice == "auto" or not c.message.tool_calls), f"{model} tool_choice {choice}: {c}")
    # The round trip: the call and its result back through the template.
    first = client.chat.completions.create(model=model, messages=MESSAGES, tools=TOOLS, tool_choice="required",
                                           max_tokens=200, seed=9, parallel_tool_calls=False,
                                           extra_body=extra).choices[0].message
    call = (first.tool_calls or [None])[0]
    if check(call is not None, f"{model}: no call to round-trip"):
        history = MESSAGES + [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call.id, "type": "function",
                 "function": {"name": call.function.name, "arguments": call.function.arguments}}]},
            {"role": "tool", "tool_call_id": call.id, "content": "21 C, sunny"}]
        r = client.chat.completions.create(model=model, messages=history, tools=TOOLS, max_tokens=8,
                                           extra_body=extra)
        check(r.choices[0].finish_reason in ("stop", "length", "tool_calls"), f"{model}: round trip {r}")


def bad_tool_requests(server, model):
    bad = [
        ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "array"}}}]},
         "tools[0].function.parameters.type"),
        ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "absent"}}}, "tool_choice"),
        ({"tools": TOOLS + TOOLS[:1]}, "tools[2].function.name"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {
            "type": "object", "properties": {"x": {"type": "string", "pattern": "[a-"}}}}}], "tool_choice": "required"},
         "tool_choice"),
        ({"messages": [{"role": "assistant", "tool_calls": [{"id": "1", "type": "function",
                                                              "function": {"name": "f", "arguments": "{oops"}}]}]},
         "messages[0].tool_calls[0].function.arguments"),
        ({"tools": TOOLS, "tool_choice": "required", "response_format": {"type": "json_object"}}, "tool_choice"),
    ]
    huge = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(40000)}}  # ~1 MB
    deep = {"type": "object"}
    for _ in range(25):  # each level two JSON objects deep: 50 + the request's own, within the body's limit (64)
        deep = {"type": "object", "properties": {"x": deep}}
    bad += [
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "h", "schema": huge}}},
         "response_format.json_schema.schema"),
        ({"structured_outputs": {"regex": "(a" * 2000}}, "structured_outputs.regex"),
        ({"structured_outputs": {"grammar": 'root ::= undefined_rule'}}, "structured_outputs.grammar"),
        ({"guided_json": {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}}, "guided_json"),
        ({"guided_choice": []}, "guided_choice"),
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "d", "schema": deep}}, "max_tokens": 2},
         None),
    ]
    for fields, param in bad:
        body = dict({"model": model, "messages": MESSAGES, "max_tokens": 4}, **fields)
        status, reply, _ = server.request("POST", "/v1/chat/completions", body)
        if param is None:  # served: a deep but small schema compiles
            check(status == 200, f"{model} deep schema: {status} {str(reply)[:200]}")
            continue
        got = (reply or {}).get("error", {}).get("param")
        check(status == 400 and got == param, f"{model} {json.dumps(fields)[:120]}: {status} param {got}, want {param}")
    # A body nested 10,000 deep is refused by the JSON reader before any field is read.
    nested = '{"messages": [{"role": "user", "content": "x"}], "guided_json": ' + '{"a": ' * 10000 + "1" + "}" * 10001
    status, reply, _ = server.request_raw("POST", "/v1/chat/completions", nested.encode())
    check(status == 400 and b"deep" in reply, f"{model}: a 10,000-deep body: {status} {reply[:200]!r}")
    check(server.request("GET", "/health")[0] == 200, f"{model}: unhealthy after bad requests")


def compile_off_io_thread(tmp, folder):
    """With --http-threads 1, a request whose schema takes seconds to compile leaves the I/O thread
    free: /health, asked meanwhile, answers at once."""
    import threading  # pylint: disable=import-outside-toplevel
    import time  # pylint: disable=import-outside-toplevel
    schema_path = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "grammar", "large_schema.json")
    with open(schema_path) as f:
        schema = json.load(f)
    server = Server([folder, "--served-model-name", "qwen", "--http-threads", "1", "--rope-inv-freq-bf16"], tmp)
    try:
        server.wait_ready()
        done = {}

        def constrained():
            start = time.time()
            done["status"] = server.request("POST", "/v1/completions", {
                "model": "qwen", "prompt": "x", "max_tokens": 1,
                "response_format": {"type": "json_schema", "json_schema": {"name": "big", "schema": schema}}})[0]
            done["seconds"], done["end"] = time.time() - start, time.time()
        worker = threading.Thread(target=constrained)
        worker.start()
        time.sleep(0.3)
        start = time.time()
        health = server.request("GET", "/health")[0]
        health_s, health_end = time.time() - start, time.time()
        worker.join()
        check(health == 200 and done.get("status") == 200, f"compile off the I/O thread: {health} {done}")
        if done["seconds"] > 1.5:
            check(health_s < 0.5 and health_end < done["end"],
                  f"/health took {health_s:.2f} s while a {done['seconds']:.1f} s compile ran")
        else:
            print(f"note: the schema compiled in {done['seconds']:.2f} s, too fast to tell", flush=True)
        print(f"/health in {health_s * 1e3:.0f} ms during a {done['seconds']:.1f} s constrained request", flush=True)
    finally:
        check(server.stop() == 0, "compile server: exit status")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        qwen = model_folder(tmp, "tiny-qwen3tok", "qwen3")
        llama = model_folder(tmp, "tiny-llama2tok", "llama2")
        template = os.path.join(tmp, "tools.jinja")
        with open(template, "w") as f:
            f.write(LLAMA_TEMPLATE)
        runs = [
            ([qwen, "--served-model-name", "qwen", "--enable-auto-tool-choice", "--tool-call-parser", "hermes"],
             "qwen", False),
            ([llama, "--served-model-name", "llama", "--chat-template", template, "--enable-auto-tool-choice",
              "--tool-call-parser", "llama3_json"], "llama", False),
            ([qwen, "--served-model-name", "qwen-r", "--enable-auto-tool-choice", "--tool-call-parser", "hermes",
              "--reasoning-parser", "qwen3"], "qwen-r", True),
        ]
        for args, model, reasoning in runs:
            server = Server(args + ["--rope-inv-freq-bf16"], tmp)
            try:
                server.wait_ready()
                tool_checks(server, model, reasoning_off=reasoning)
                if not reasoning:
                    bad_tool_requests(server, model)
                print(f"{model} checked", flush=True)
            finally:
                check(server.stop() == 0, f"{model}: exit status")
        compile_off_io_thread(tmp, qwen)
    print(f"{len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
