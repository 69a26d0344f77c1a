#!/usr/bin/env python3
"""tests/python/test_chat_template_differential.py — fullgraph's chat templates against jinja2.

A seeded generator builds varied conversations (system prompt or not, 1-8 turns, unicode,
quotes, newlines, JSON-looking and template-looking text, empty content, tool calls, reasoning,
enable_thinking true/false/absent, tools, add_generation_prompt both ways). Each is rendered by
the Llama-3.1 and Qwen3 templates from the fixtures and by the inline ChatML, Mistral, Llama-2
and "kitchen sink" templates below, once by `fullgraph render-chat --batch` and once by jinja2
set up exactly as transformers sets it up (ImmutableSandboxedEnvironment with trim_blocks,
lstrip_blocks, the loopcontrols extension and the {% generation %} tag, a json.dumps tojson,
raise_exception and strftime_now). Every render must be byte-identical, and where one engine
raises the other must raise too. Differences are printed and the test exits 1.

Environment: FULLGRAPH_BINARY (the fullgraph executable), FULLGRAPH_TESTDATA (the fixtures).
"""
import json
import os
import random
import subprocess
import sys
import tempfile
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

SEED = 20240726
CONVERSATIONS = 600
MIN_SUCCESSFUL_RENDERS = 150  # per template, so that agreeing on errors alone cannot pass

# ---- the reference: jinja2 as transformers' _compile_jinja_template configures it ----


class AssistantTracker(Extension):
    """transformers' {% generation %} tag; outside of assistant-mask mode it renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    @jinja2.pass_eval_context
    def _generation_support(self, context, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


def reference_environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


# ---- inline templates (written for this test in the style of the models that ship them) ----

CHATML = r"""{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"""

MISTRAL = r"""{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('After the optional system message, conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if message['role'] == 'user' %}
        {%- if loop.first and system_message is defined %}
            {{- ' [INST] ' + system_message + '\n\n' + message['content'] + ' [/INST]' }}
        {%- else %}
            {{- ' [INST] ' + message['content'] + ' [/INST]' }}
        {%- endif %}
    {%- elif message['role'] == 'assistant' %}
        {{- ' ' + message['content'] + eos_token }}
    {%- else %}
        {{- raise_exception('Only user and assistant roles are supported, with the exception of an initial optional system message!') }}
    {%- endif %}
{%- endfor %}
"""

LLAMA2 = r"""{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}"""

KITCHEN_SINK = r"""{#- A template written for this test: it leans on the language features real chat templates use
    (macros, namespaces, loop variables, filters, tests, tojson with indent) rather than on any
    one model's format. -#}
{%- macro render_content(content) -%}
    {%- if content is string -%}
        {{- content | trim -}}
    {%- elif content is mapping -%}
        {{- content | tojson -}}
    {%- elif content is iterable -%}
        {%- for part in content if part.type == 'text' -%}
            {{- part.text }}{{ '\n' if not loop.last }}
        {%- endfor -%}
    {%- else -%}
        {{- content | string -}}
    {%- endif -%}
{%- endmacro -%}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- set ns = namespace(system='', turns=0, last_user=-1, roles=[]) %}
{%- for m in messages %}
    {%- if m.role == 'system' %}
        {%- set ns.system = ns.system ~ render_content(m.content) %}
    {%- elif m.role == 'user' %}
        {%- set ns.last_user = loop.index0 %}
    {%- endif %}
    {%- if m.role not in ns.roles %}
        {%- set ns.roles = ns.roles + [m.role] %}
    {%- endif %}
{%- endfor %}
{{- bos_token }}
{{- '<|system|>\nDate: ' + date_string + '\n' }}
{%- if tools is not none %}
    {{- 'Tools (' ~ tools | length ~ '):\n' }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- '\n' if not loop.last else '\n\n' }}
    {%- endfor %}
{%- endif %}
{%- if ns.system %}
    {{- ns.system.split('\n') | map('trim') | reject('equalto', '') | join(' / ') }}
{%- endif %}
{{- eos_token }}
{%- for m in messages | rejectattr('role', 'equalto', 'system') %}
    {%- set ns.turns = ns.turns + 1 %}
    {{- '<|' ~ m.role | upper ~ '|' ~ loop.index ~ '/' ~ loop.length ~ '>' }}
    {%- if m.tool_calls is defined and m.tool_calls %}
        {%- for call in m.tool_calls %}
            {%- set f = call.function if call.function is defined else call %}
            {{- '\n' ~ {'name': f.name, 'arguments': f.arguments} | tojson }}
        {%- endfor %}
    {%- elif m.content is none %}
        {{- '\n(empty)' }}
    {%- else %}
        {{- '\n' + render_content(m.content) }}
    {%- endif %}
    {%- if m.reasoning_content is defined and m.reasoning_content %}
        {{- '\n[reasoning: ' ~ m.reasoning_content | length ~ ' chars, ' ~ m.reasoning_content | wordcount ~ ' words]' }}
    {%- endif %}
    {%- if loop.previtem is defined and loop.previtem.role == m.role %}
        {{- ' (again)' }}
    {%- endif %}
    {{- '\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|ASSISTANT|>\n' }}
    {%- if enable_thinking is defined and not enable_thinking %}
        {{- '<think></think>\n' }}
    {%- elif enable_thinking is defined %}
        {{- '<think>\n' }}
    {%- endif %}
{%- endif %}
{{- '<!-- turns=' ~ ns.turns ~ ' last_user=' ~ ns.last_user ~ ' roles=' ~ ns.roles | sort | join(',') ~ ' -->' }}
"""

# ---- the conversation generator ----

PIECES = [
    "Hello", "What is 2+2?", "Tell me a joke.", "naïve café", "中文字符测试", "😀🎉👍🏽", "مرحبا بالعالم",
    "e\u0301 combining", "\u00a0non-breaking\u00a0", "\u3000ideographic\u3000", "line\u2028separator",
    "tab\there", "it's a 'quote'", 'say "hi"', "back\\slash \\n not a newline", "C:\\path\\to",
    '{"key": [1, 2.5, null, true], "nested": {"a": "b"}}', "[1, 2, 3]", "{{ not_a_variable }}",
    "{% if x %}text{% endif %}", "{# not a comment #}", "<think>\nsome reasoning\n</think>\n\nthe answer",
    "</think>", "<tool_response>ok</tool_response>", "<|im_end|>", "[INST] fake [/INST]", "<<SYS>>",
    "Ünïcödé ÆØÅ ß ς ΣΑΣ", "zero\u200bwidth", "bell\x07char", "\n", "\n\n", "  ", "\t", "\r\n", "x" * 200,
    "  leading and trailing  ", "1.0", "-0", "None", "true", "%s %d {} {0}",
]

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city, in °C.",
                                      "parameters": {"type": "object", "properties": {
                                          "city": {"type": "string", "description": "e.g. \"Paris\""},
                                          "days": {"type": "integer", "minimum": 1, "maximum": 7},
                                          "precision": {"type": "number", "default": 0.5}},
                                          "required": ["city"]}}},
    {"type": "function", "function": {"name": "search", "description": "搜索 the web",
                                      "parameters": {"type": "object", "properties": {
                                          "query": {"type": "string"}, "safe": {"type": "boolean", "default": True},
                                          "filters": {"type": "array", "items": {"type": "string"}}}}}},
]


def random_text(rng):
    count = rng.choice([0, 1, 1, 1, 2, 3, 5])
    text = rng.choice(["", " ", "\n", ""]).join(rng.choice(PIECES) for _ in range(count))
    if rng.random() < 0.15:
        text = rng.choice([" ", "\n", "  \n"]) + text + rng.choice([" ", "\n", "\n\n"])
    return text


def random_tool_call(rng):
    arguments = {"city": rng.choice(["Paris", "Zürich", "東京"]), "days": rng.randint(1, 7)}
    if rng.random() < 0.5:
        arguments["precision"] = rng.choice([0.5, 1.0, 2.25, 1e-7])
    if rng.random() < 0.3:
        arguments = json.dumps(arguments, ensure_ascii=False)  # some clients send a string
    return {"type": "function", "function": {"name": rng.choice(["get_weather", "search"]), "arguments": arguments}}


def random_conversation(rng):
    messages = []
    if rng.random() < 0.35:
        messages.append({"role": "system", "content": random_text(rng)})
    turns = rng.randint(1, 8)
    role = "user"
    for _ in range(turns):
        if rng.random() < 0.06:  # break the alternation now and then: strict templates must raise
            role = rng.choice(["user", "assistant", "system"])
        if role == "user":
            if rng.random() < 0.05:
                content = [{"type": "text", "text": random_text(rng)}, {"type": "image"},
                           {"type": "text", "text": random_text(rng)}]
            else:
                content = random_text(rng)
            messages.append({"role": "user", "content": content})
            role = "assistant"
            continue
        message = {"role": role, "content": random_text(rng)}
        if role == "assistant" and rng.random() < 0.15:
            message["reasoning_content"] = random_text(rng)
        if role == "assistant" and rng.random() < 0.12:
            message["tool_calls"] = [random_tool_call(rng) for _ in range(rng.randint(1, 2))]
            if rng.random() < 0.2:
                message["content"] = None
            messages.append(message)
            for _ in message["tool_calls"]:
                messages.append({"role": "tool", "content": random_text(rng) or '{"temperature": 21.5}'})
            role = "assistant"
            continue
        messages.append(message)
        role = "user"
    kwargs = {"add_generation_prompt": rng.random() < 0.5}
    thinking = rng.random()
    if thinking < 0.3:
        kwargs["enable_thinking"] = True
    elif thinking < 0.6:
        kwargs["enable_thinking"] = False
    if rng.random() < 0.2:
        kwargs["tools"] = rng.sample(TOOLS, rng.randint(1, 2))
    if rng.random() < 0.15:
        kwargs["date_string"] = rng.choice(["01 Jan 2025", "31 Déc 1999"])
    return messages, kwargs


# ---- rendering on both sides ----


def special_token(config, key):
    value = config.get(key)
    if isinstance(value, dict):
        value = value.get("content")
    return value or None


def reference_render(template, messages, kwargs, bos_token, eos_token):
    variables = {"messages": messages, "tools": kwargs.get("tools"),
                 "add_generation_prompt": kwargs.get("add_generation_prompt", False)}
    if bos_token:
        variables["bos_token"] = bos_token
    if eos_token:
        variables["eos_token"] = eos_token
    for key in ("enable_thinking", "date_string"):
        if key in kwargs:
            variables[key] = kwargs[key]
    try:
        return "ok", template.render(**variables)
    except Exception as e:  # any raise counts; the messages differ between engines
        return "error", f"{type(e).__name__}: {e}"


def fullgraph_render(binary, args, cases, workdir):
    batch = os.path.join(workdir, "batch.jsonl")
    with open(batch, "w", encoding="utf-8") as f:
        for messages, kwargs in cases:
            f.write(json.dumps({"messages": messages, "kwargs": kwargs}, ensure_ascii=False) + "\n")
    proc = subprocess.run([binary, "render-chat", *args, "--batch", batch], capture_output=True, timeout=600)
    if proc.returncode != 0:
        sys.exit(f"fullgraph render-chat failed ({proc.returncode}): {proc.stderr.decode(errors='replace')}")
    lines = proc.stdout.decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != len(cases):
        sys.exit(f"fullgraph returned {len(lines)} lines for {len(cases)} conversations")
    results = []
    for line in lines:
        value = json.loads(line)
        results.append(("error", value["error"]) if isinstance(value, dict) else ("ok", value))
    return results


def main():
    binary = os.environ["FULLGRAPH_BINARY"]
    testdata = os.environ["FULLGRAPH_TESTDATA"]
    rng = random.Random(SEED)
    cases = [random_conversation(rng) for _ in range(CONVERSATIONS)]
    env = reference_environment()
    failures = 0
    with tempfile.TemporaryDirectory() as workdir:
        # (name, template source, folder for bos/eos, args for fullgraph)
        specs = []
        for name in ("llama3_1", "qwen3"):
            folder = os.path.join(testdata, "tokenizers", name)
            with open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8") as f:
                config = json.load(f)
            specs.append((name, config["chat_template"], config, ["--model", folder]))
        token_folder = os.path.join(testdata, "tokenizers", "llama2")  # <s> and </s>, no template
        with open(os.path.join(token_folder, "tokenizer_config.json"), encoding="utf-8") as f:
            token_config = json.load(f)
        for name, source in (("chatml", CHATML), ("mistral", MISTRAL), ("llama2", LLAMA2),
                             ("kitchen_sink", KITCHEN_SINK)):
            path = os.path.join(workdir, name + ".jinja")
            with open(path, "w", encoding="utf-8") as f:
                f.write(source)
            specs.append((name, source, token_config, ["--model", token_folder, "--chat-template", path]))

        for name, source, config, args in specs:
            template = env.from_string(source)
            bos, eos = special_token(config, "bos_token"), special_token(config, "eos_token")
            ours = fullgraph_render(binary, args, cases, workdir)
            counts = {"ok": 0, "error": 0}
            mismatches = 0
            for (messages, kwargs), mine in zip(cases, ours):
                ref = reference_render(template, messages, kwargs, bos, eos)
                same = ref[0] == mine[0] and (ref[0] == "error" or ref[1] == mine[1])
                counts[ref[0]] += 1
                if not same:
                    mismatches += 1
                    if mismatches <= 5:
                        print(f"--- {name}: differs for messages={json.dumps(messages, ensure_ascii=False)} "
                              f"kwargs={json.dumps(kwargs, ensure_ascii=False)}")
                        print(f"    jinja2:    {ref[0]}: {ref[1]!r}")
                        print(f"    fullgraph: {mine[0]}: {mine[1]!r}")
            print(f"{name}: {len(cases)} conversations, {counts['ok']} rendered, {counts['error']} raised, "
                  f"{mismatches} differ")
            failures += mismatches
            if counts["ok"] < MIN_SUCCESSFUL_RENDERS:
                print(f"{name}: only {counts['ok']} successful renders; the generator no longer exercises it")
                failures += 1
    if failures:
        print(f"FAIL: {failures} difference(s)")
        return 1
    print("OK: fullgraph and jinja2 agree on every render")
    return 0


if __name__ == "__main__":
    sys.exit(main())
