// tests/test_chat_template.cpp — the chat-template engine: goldens from transformers, the Jinja
// language as transformers configures it, the chat-template styles models ship, error messages
// with line numbers, and the limits that keep hostile templates cheap.
//
// The expected strings of the language tables were produced by jinja2 3.1.6 in the environment
// transformers builds (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
// tojson with ensure_ascii=False); tests/python/test_chat_template_differential.py compares the
// two engines on thousands more renders.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/jinja_json.h"
#include "tokenizer/jinja_template.h"

namespace fg {
namespace {

using nlohmann::ordered_json;

std::string render(std::string_view source, const ordered_json& vars = ordered_json::object(),
                   const JinjaLimits& limits = {}) {
  JinjaTemplate tmpl(source, limits);
  std::vector<std::pair<std::string, jinja::Value>> values;
  for (auto it = vars.begin(); it != vars.end(); ++it) values.emplace_back(it.key(), jinja::value_from_json(it.value()));
  return tmpl.render(std::move(values));
}

// The message of the fg::Error that parsing or rendering raises; fails the test if none does.
std::string error_of(std::string_view source, const ordered_json& vars = ordered_json::object(),
                     const JinjaLimits& limits = {}) {
  try {
    const std::string out = render(source, vars, limits);
    ADD_FAILURE() << "expected an error, rendered " << out.size() << " bytes";
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

struct LanguageCase {
  const char* name;
  const char* source;
  const char* vars;  // JSON object
  const char* expected;
};

const LanguageCase kWhitespaceCases[] = {
    {"trim_blocks drops the newline after a block tag",
     "{% if true %}\nyes\n{% endif %}\nafter",
     "{}",
     "yes\nafter"},
    {"lstrip_blocks drops indentation before a block tag",
     "a\n    {% if true %}\n    b\n    {% endif %}\nc",
     "{}",
     "a\n    b\nc"},
    {"minus strips all whitespace on its side",
     "a  \n  {%- if true -%}  \n  b  \n  {%- endif -%}\n  c",
     "{}",
     "abc"},
    {"plus keeps the text lstrip would drop",
     "a\n    {%+ if true +%}\nb\n{% endif %}",
     "{}",
     "a\n    \nb\n"},
    {"variables are not lstripped",
     "a\n    {{ 'x' }}\n    {{- 'y' -}}\n  z",
     "{}",
     "a\n    xyz"},
    {"comments obey trim and lstrip",
     "a\n  {# note #}\nb {#- tight -#}   c",
     "{}",
     "a\nbc"},
    {"raw blocks print tags verbatim",
     "{% raw %}{{ not evaluated }}{% endraw %}\nend",
     "{}",
     "{{ not evaluated }}end"},
    {"one trailing newline is dropped and CRLF normalised",
     "line1\r\nline2\n\n",
     "{}",
     "line1\nline2\n"},
    {"unicode whitespace counts for lstrip",
     "a\n　{% if true %}b{% endif %}",
     "{}",
     "a\nb"},
};

const LanguageCase kExpressionsCases[] = {
    {"arithmetic follows Python",
     "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -2 }} {{ 10 / 4 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }} {{ true + 1 }}",
     "{}",
     "3 -4 -1 2.5 1024 0.5 3.0 2"},
    {"jinja precedence quirks",
     "{{ -2 ** 2 }} {{ 2 ** 3 ** 2 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 'a' ~ (1 + 2) }} {{ 2 * 3 ~ 'x' }}",
     "{}",
     "4 64 7 9 a3 6x"},
    {"printing matches Python str()",
     "{{ true }} {{ none }} {{ 1.0 }} {{ 1e16 }} {{ 1e-5 }} {{ 0.1 + 0.2 }} {{ [1, 'a', none, 1.5] }} {{ {'k': 'v', 'n': [true]} }} {{ (1,) }}",
     "{}",
     "True None 1.0 1e+16 1e-05 0.30000000000000004 [1, 'a', None, 1.5] {'k': 'v', 'n': [True]} (1,)"},
    {"string repr picks its quote",
     "{{ [\"it's\", 'say \"hi\"', 'both \\' \"', 'tab\\tnl\\n'] }}",
     "{}",
     "[\"it's\", 'say \"hi\"', 'both \\' \"', 'tab\\tnl\\n']"},
    {"comparisons chain",
     "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ [1, 2] == (1, 2) }} {{ 'abc' < 'abd' }}",
     "{}",
     "True False True False True"},
    {"in and not in",
     "{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }} {{ not 1 in [1] }}",
     "{}",
     "True True True True False"},
    {"and/or return operands",
     "{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ none or [] }}|{{ 1 if false }}|{{ 'y' if 0 else 'n' }}",
     "{}",
     "x b []||n"},
    {"concatenation converts with str()",
     "{{ 'x' ~ none ~ 1.0 ~ true ~ missing }}",
     "{}",
     "xNone1.0True"},
    {"slicing",
     "{{ 'hello'[1:3] }} {{ 'hello'[::-1] }} {{ [1, 2, 3, 4, 5][-2:] }} {{ [1, 2, 3, 4, 5][::2] }} {{ [1, 2, 3, 4, 5][4:0:-2] }} {{ 'héllo'[1] }}",
     "{}",
     "el olleh [4, 5] [1, 3, 5] [5, 3] é"},
    {"attribute and item access",
     "{{ m.role }} {{ m['content'] }} {{ m.missing }}|{{ m.items()|list }} {{ d['items'] }} {{ x.0 }}",
     "{\"m\": {\"role\": \"user\", \"content\": \"hi\"}, \"d\": {\"items\": 5}, \"x\": [\"first\"]}",
     "user hi |[('role', 'user'), ('content', 'hi')] 5 first"},
    {"string methods",
     "{{ ' a b '.strip() }}|{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.rsplit(' ', 1) }} {{ 'xxhixx'.strip('x') }} {{ 'Hi'.upper() }}{{ 'Hi'.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }}",
     "{}",
     "a b|['a', 'b', '', 'c'] ['a', 'b'] ['a b', 'c'] hi HIhi Hello World Hello"},
    {"more string methods",
     "{{ 'abc'.startswith(('x', 'a')) }} {{ 'abc'.endswith('bc') }} {{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.count('l') }} {{ 'a-b-c'.replace('-', '+', 1) }} {{ '-'.join(['a', 'b']) }} {{ '{} and {}'.format(1, 'x') }}",
     "{}",
     "True True 2 3 2 a+b-c a-b 1 and x"},
    {"dict methods",
     "{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 5) }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }}",
     "{\"d\": {\"a\": 1, \"b\": 2}}",
     "1 None 5 ['a', 'b'] [1, 2] [('a', 1), ('b', 2)]"},
    {"range and dict views print like Python",
     "{{ range(3) }} {{ range(1, 9, 2) }} {{ d.keys() }} {{ d.values() }} {{ d.items() }} {{ range(3)|list }} {{ d.keys()|length }}",
     "{\"d\": {\"a\": 1}}",
     "range(0, 3) range(1, 9, 2) dict_keys(['a']) dict_values([1]) dict_items([('a', 1)]) [0, 1, 2] 1"},
    {"literal slices fold like jinja2",
     "[{{ (2.5)[1:] }}] {{ none[::-1] is defined }} {{ 'abcdef'[1:4] }}",
     "{}",
     "[] False bcd"},
    {"percent formatting",
     "{{ '%s|%d|%.2f|%-4s|%5d' % ('a', 3, 3.14159, 'ab', 42) }} {{ '%(x)s' % {'x': 1} }}",
     "{}",
     "a|3|3.14|ab  |   42 1"},
};

const LanguageCase kStatementsCases[] = {
    {"for with loop variables",
     "{% for x in ['a', 'b', 'c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.cycle('o', 'e') }};{% endfor %}",
     "{}",
     "1032TrueFalse3bo;2121FalseFalse3ace;3210FalseTrue3bo;"},
    {"for with filter and else",
     "{% for x in [1, 2, 3, 4] if x is even %}{{ x }}/{{ loop.length }} {% endfor %}{% for x in [] %}x{% else %}empty{% endfor %}",
     "{}",
     "2/2 4/2 empty"},
    {"for over dict items with unpacking",
     "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}",
     "{\"d\": {\"b\": 1, \"a\": 2}}",
     "b=1;a=2;ba"},
    {"break and continue",
     "{% for i in range(10) %}{% if i is odd %}{% continue %}{% endif %}{% if i > 6 %}{% break %}{% endif %}{{ i }}{% endfor %}",
     "{}",
     "0246"},
    {"if elif else",
     "{% for n in [1, 2, 3] %}{% if n == 1 %}one{% elif n == 2 %}two{% else %}many{% endif %} {% endfor %}",
     "{}",
     "one two many "},
    {"set in a loop does not leak; namespace does",
     "{% set x = 'out' %}{% set ns = namespace(n=0) %}{% for i in range(3) %}{{ x }}{% set x = 'in' %}{% set ns.n = ns.n + i %}{% endfor %} {{ x }} {{ ns.n }}",
     "{}",
     "outoutout out 3"},
    {"tuple unpacking and block set",
     "{% set a, b = 1, 2 %}{% set c = 3, 4 %}{% set block %}  {{ a + b }} {{ c }}\n{% endset %}[{{ block }}]",
     "{}",
     "[  3 (3, 4)\n]"},
    {"block set with a filter",
     "{% set shout | upper %}hello {{ 'there' }}{% endset %}{{ shout }}",
     "{}",
     "HELLO THERE"},
    {"macros with defaults and keyword arguments",
     "{% macro tag(name, body='', open=true) %}<{{ name }}>{{ body }}{% if open %}</{{ name }}>{% endif %}{% endmacro %}{{ tag('a') }}{{ tag('b', 'x') }}{{ tag('c', open=false) }}{{ tag(name='d', body=1) }}",
     "{}",
     "<a></a><b>x</b><c><d>1</d>"},
    {"macro defaults see earlier parameters and late-bound globals",
     "{% set g = 1 %}{% macro m(a, b=a * 2) %}{{ a }}{{ b }}{{ g }}{% endmacro %}{% set g = 2 %}{{ m(1) }} {{ m(1, 5) }}",
     "{}",
     "122 152"},
    {"recursive macro",
     "{% macro count(n) %}{% if n > 0 %}{{ n }}{{ count(n - 1) }}{% endif %}{% endmacro %}{{ count(5) }}",
     "{}",
     "54321"},
    {"with and filter blocks",
     "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a }}|{% filter upper %}quiet {{ 'words' }}{% endfilter %}",
     "{}",
     "3|QUIET WORDS"},
    {"namespace holds lists",
     "{% set ns = namespace(items=[]) %}{% for m in msgs %}{% set ns.items = ns.items + [m.role] %}{% endfor %}{{ ns.items|join(',') }}",
     "{\"msgs\": [{\"role\": \"a\"}, {\"role\": \"b\"}]}",
     "a,b"},
    {"loop over reversed messages",
     "{% for m in msgs[::-1] %}{{ (msgs|length - 1) - loop.index0 }}{{ m }}{% endfor %}",
     "{\"msgs\": [\"x\", \"y\", \"z\"]}",
     "2z1y0x"},
    {"generation blocks pass through",
     "{% generation %}kept {{ 1 }}{% endgeneration %}",
     "{}",
     "kept 1"},
};

const LanguageCase kFiltersCases[] = {
    {"tojson like json.dumps with ensure_ascii off",
     "{{ x|tojson }}",
     "{\"x\": {\"b\": [1, 2.5, null, true, \"é\\\"\\n\\u0001\"], \"a\": {}}}",
     "{\"b\": [1, 2.5, null, true, \"é\\\"\\n\\u0001\"], \"a\": {}}"},
    {"tojson indent and sort_keys",
     "{{ x|tojson(indent=2) }}|{{ x|tojson(sort_keys=true) }}|{{ x|tojson(separators=(',', ':')) }}",
     "{\"x\": {\"b\": [1, {}], \"a\": []}}",
     "{\n  \"b\": [\n    1,\n    {}\n  ],\n  \"a\": []\n}|{\"a\": [], \"b\": [1, {}]}|{\"b\":[1,{}],\"a\":[]}"},
    {"string filters",
     "{{ '  hi  '|trim }}|{{ 'xhix'|trim('x') }}|{{ 'Hi'|upper }}{{ 'Hi'|lower }}|{{ 'hello wORLD-foo(bar'|title }}|{{ 'hELLO'|capitalize }}|{{ 'a b c'|wordcount }}|{{ 'aaa'|replace('a', 'b', 2) }}|{{ none|string }}",
     "{}",
     "hi|hi|HIhi|Hello World-Foo(Bar|Hello|3|bba|None"},
    {"length and count",
     "{{ 'héllo'|length }} {{ [1, 2]|count }} {{ {'a': 1}|length }} {{ missing|length }}",
     "{}",
     "5 2 1 0"},
    {"default",
     "{{ missing|default('dflt') }} {{ ''|default('empty') }} {{ ''|d('empty', true) }} {{ 0|default(5) }}",
     "{}",
     "dflt  empty 0"},
    {"sequence filters",
     "{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'a']|sort }} {{ ['b', 'A', 'a']|unique|list }} {{ [1, 2]|reverse|list }} {{ 'abc'|reverse }} {{ [1, 2, 3]|first }}{{ [1, 2, 3]|last }} {{ 'ab'|list }} {{ [1, 2, 3]|sum }} {{ [3, 1]|max }}{{ [3, 1]|min }}",
     "{}",
     "[1, 2, 3] ['A', 'a', 'b'] ['b', 'A'] [2, 1] cba 13 ['a', 'b'] 6 31"},
    {"join, map, select and friends",
     "{{ [1, 2, 3]|join('-') }} {{ msgs|map(attribute='role')|join(',') }} {{ ['a', 'b']|map('upper')|list }} {{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3]|reject('equalto', 2)|list }} {{ msgs|selectattr('role', 'equalto', 'user')|list|length }} {{ msgs|rejectattr('role', 'eq', 'user')|map(attribute='role')|first }}",
     "{\"msgs\": [{\"role\": \"user\"}, {\"role\": \"assistant\"}, {\"role\": \"user\"}]}",
     "1-2-3 user,assistant,user ['A', 'B'] [1, 3] [1, 3] 2 assistant"},
    {"filters that return generators are true and one-shot",
     "{% set g = []|select %}{{ 'yes' if g else 'no' }} {% set u = [1, 2, 2]|unique %}{{ u|list }}{{ u|list }} {{ [3, 4]|map('string')|first }} {{ [1, 2]|reverse|list }} {{ {'a': 1}|items|list }}",
     "{}",
     "yes [1, 2][] 3 [2, 1] [('a', 1)]"},
    {"items, dictsort and numbers",
     "{{ d|items|list }} {{ d|dictsort }} {{ '42'|int + 1 }} {{ '4.5'|int }} {{ 'x'|int }} {{ '2.5'|float }} {{ -3|abs }} {{ 2.5|round }} {{ 2.675|round(2) }} {{ 3.7|round(method='floor') }}",
     "{\"d\": {\"b\": 1, \"a\": 2}}",
     "[('b', 1), ('a', 2)] [('a', 2), ('b', 1)] 43 4 0 2.5 3 2.0 2.67 3.0"},
    {"indent",
     "{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(2, blank=true) }}",
     "{}",
     "a\n  b\n\n  c|  a\n  b|a\n  \n  b"},
    {"safe and escape",
     "{{ '<b>'|safe }} {{ '<a href=\"x\">&'|e }}",
     "{}",
     "<b> &lt;a href=&#34;x&#34;&gt;&amp;"},
};

const LanguageCase kTestsCases[] = {
    {"type tests",
     "{{ x is defined }}{{ x is undefined }}{{ none is none }}{{ 1 is number }}{{ true is number }}{{ true is integer }}{{ 1 is integer }}{{ 1.0 is float }}{{ true is boolean }}{{ 'a' is string }}{{ {} is mapping }}{{ [] is sequence }}{{ 'a' is iterable }}{{ x is iterable }}",
     "{}",
     "FalseTrueTrueTrueTrueFalseTrueTrueTrueTrueTrueTrueTrueTrue"},
    {"value tests",
     "{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(2) }}{{ 2 is eq 2 }}{{ 2 is equalto 3 }}{{ 3 is gt 2 }}{{ 'a' is in 'abc' }}{{ true is true }}{{ 1 is true }}{{ false is false }}{{ 'ab' is lower }}",
     "{}",
     "TrueTrueTrueFalseTrueFalseTrueTrueTrueFalseTrueTrue"},
    {"negated tests",
     "{{ x is not defined }} {{ none is not none }} {{ not 1 is odd }}",
     "{}",
     "True False False"},
};

const LanguageCase kUndefinedCases[] = {
    {"printing and iterating undefined gives nothing",
     "[{{ missing }}][{% for x in missing %}x{% endfor %}][{{ missing|length }}][{{ missing is defined }}]",
     "{}",
     "[][][0][False]"},
    {"missing keys and attributes are undefined",
     "{{ m.nope is defined }} {{ m['nope'] is defined }} {{ m.role }} {{ l[5] is defined }} {{ none.x is defined }}",
     "{\"m\": {\"role\": \"r\"}, \"l\": [1]}",
     "False False r False False"},
    {"undefined compares equal only to undefined",
     "{{ missing == none }} {{ missing == other_missing }} {{ missing != 1 }}",
     "{}",
     "False True True"},
};

void check_cases(const LanguageCase* cases, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    SCOPED_TRACE(cases[i].name);
    EXPECT_EQ(render(cases[i].source, ordered_json::parse(cases[i].vars)), cases[i].expected);
  }
}

#define FG_CHECK_CASES(table) check_cases(table, sizeof(table) / sizeof(table[0]))

TEST(JinjaWhitespace, MatchesJinja2WithTrimAndLstripBlocks) { FG_CHECK_CASES(kWhitespaceCases); }
TEST(JinjaExpressions, FollowPythonSemantics) { FG_CHECK_CASES(kExpressionsCases); }
TEST(JinjaStatements, ScopesLoopsMacrosAndBlocks) { FG_CHECK_CASES(kStatementsCases); }
TEST(JinjaFilters, BuiltinsAndTransformersTojson) { FG_CHECK_CASES(kFiltersCases); }
TEST(JinjaTests, IsTests) { FG_CHECK_CASES(kTestsCases); }
TEST(JinjaUndefined, SilentUntilUsed) { FG_CHECK_CASES(kUndefinedCases); }

TEST(JinjaUndefined, UsingUndefinedFails) {
  EXPECT_EQ(error_of("{{ missing.attr }}"), "chat template line 1: 'missing' is undefined");
  EXPECT_EQ(error_of("{{ missing + 1 }}"), "chat template line 1: 'missing' is undefined");
  EXPECT_EQ(error_of("{{ m.nope.deeper }}", {{"m", ordered_json::object()}}),
            "chat template line 1: 'dict object' has no attribute 'nope'");
  EXPECT_EQ(error_of("{{ missing|tojson }}"), "chat template line 1: Object of type Undefined is not JSON serializable");
}

TEST(JinjaErrors, CarryTheTemplateLine) {
  EXPECT_EQ(error_of("a\nb\n{{ 1 + }}"), "chat template line 3: unexpected end of print statement");
  EXPECT_EQ(error_of("x\n{{ 'a'|foo }}"), "chat template line 2: no filter named 'foo'");
  EXPECT_EQ(error_of("x\n\n{{ 1 is foo }}"), "chat template line 3: no test named 'foo'");
  EXPECT_EQ(error_of("{% if true %}\n{% frobnicate %}\n{% endif %}"), "chat template line 2: unknown tag 'frobnicate'");
  EXPECT_EQ(error_of("{% for m in messages %}\n{{ m }}\n"),
            "chat template line 2: unexpected end of template, expected 'endfor' or 'else' (the innermost open block is "
            "'for')");
  EXPECT_EQ(error_of("{% break %}"), "chat template line 1: 'break' outside of a loop");
  EXPECT_EQ(error_of("{{ 'unterminated }}"), "chat template line 1: unexpected char '''");
  // Runtime errors name the line of the failing node, also inside a macro called elsewhere.
  EXPECT_EQ(error_of("{% macro f(x) %}\n\n{{ x + 'a' }}\n{% endmacro %}\n{{ f(1) }}"),
            "chat template line 3: unsupported operand type(s) for +: 'int' and 'str'");
  EXPECT_EQ(error_of("{% if true %}\n  {{ raise_exception('Only user and assistant roles are supported!') }}\n{% endif %}"),
            "chat template line 2: Only user and assistant roles are supported!");
  EXPECT_EQ(error_of("\n{{ [1].append(2) }}"),
            "chat template line 2: access to attribute 'append' of 'list' object is unsafe.");
  EXPECT_EQ(error_of("{{ range(100001)|length }}"),
            "chat template line 1: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  EXPECT_EQ(error_of("{{ x[1:] }}", {{"x", 2.5}}), "chat template line 1: 'float' object is not subscriptable");
  EXPECT_EQ(error_of("{{ [1]|select|length }}"), "chat template line 1: object of type 'generator' has no len()");
  // Like jinja2, an unknown filter in a branch that is not taken is not an error.
  EXPECT_EQ(render("{% if false %}{{ x|foo }}{% endif %}ok"), "ok");
}

TEST(JinjaLimits, StepLimit) {
  JinjaLimits limits;
  limits.max_steps = 1'000'000;
  EXPECT_EQ(error_of("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", {}, limits),
            "chat template line 1: step limit of 1000000 exceeded");
}

TEST(JinjaLimits, OutputLimit) {
  EXPECT_EQ(error_of("{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}"),
            "chat template line 1: output size limit of 1048576 bytes exceeded");
  EXPECT_EQ(error_of("{{ 'x' * 1000000000 }}"), "chat template line 1: output size limit of 1048576 bytes exceeded");
  EXPECT_EQ(error_of("{% set ns = namespace(s='x') %}\n{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"),
            "chat template line 2: output size limit of 1048576 bytes exceeded");
  EXPECT_EQ(error_of("{% set l = [[1] * 1000] * 1000 %}{{ [l] * 1000 }}"),
            "chat template line 1: output size limit of 1048576 bytes exceeded");
}

TEST(JinjaLimits, RecursionLimits) {
  EXPECT_EQ(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}\n{{ f(0) }}"),
            "chat template line 1: macro calls nested more than 200 deep");
  JinjaLimits limits;
  limits.max_call_depth = 10;
  EXPECT_EQ(render("{% macro f(n) %}{% if n %}{{ f(n - 1) }}{% endif %}.{% endmacro %}{{ f(9) }}", {}, limits),
            "..........");
  EXPECT_EQ(error_of("{{ " + std::string(10000, '(') + "1" + std::string(10000, ')') + " }}"),
            "chat template line 1: template nested more than 256 levels deep");
  std::string blocks;
  for (int i = 0; i < 1000; ++i) blocks += "{% if true %}";
  EXPECT_EQ(error_of(blocks), "chat template line 1: template nested more than 256 levels deep");
  std::string chain = "{{ 1";
  for (int i = 0; i < 3000; ++i) chain += " + 1";
  EXPECT_EQ(error_of(chain + " }}"), "chat template line 1: expression nested more than 1024 levels deep");
  EXPECT_EQ(error_of("{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}"),
            "chat template line 1: value nested more than 256 levels deep");
}

// ---- chat templates as models ship them ----

ChatTemplateConfig config_from(const std::string& source) {
  ChatTemplateConfig config;
  config.chat_template = source;
  config.bos_token = "<s>";
  config.eos_token = "</s>";
  return config;
}

ordered_json conversation(bool with_system) {
  ordered_json messages = ordered_json::array();
  if (with_system) messages.push_back({{"role", "system"}, {"content", "Be brief."}});
  messages.push_back({{"role", "user"}, {"content", "Hi"}});
  messages.push_back({{"role", "assistant"}, {"content", " Hello! "}});
  messages.push_back({{"role", "user"}, {"content", "Bye"}});
  return messages;
}

constexpr const char* kChatMl = R"J({% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %})J";

constexpr const char* kMistral = R"J({%- if messages[0]['role'] == 'system' %}
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
)J";

constexpr const char* kLlama2 = R"J({% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %})J";

TEST(ChatTemplateStyles, ChatMl) {
  ChatRenderOptions options;
  options.add_generation_prompt = true;
  EXPECT_EQ(render_chat(config_from(kChatMl), conversation(true), options),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n Hello! "
            "<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
  options.add_generation_prompt = false;
  EXPECT_EQ(render_chat(config_from(kChatMl), conversation(false), options),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n Hello! <|im_end|>\n<|im_start|>user\nBye<|im_end|>\n");
}

TEST(ChatTemplateStyles, MistralInstWithRoleCheck) {
  const ChatRenderOptions options;
  EXPECT_EQ(render_chat(config_from(kMistral), conversation(true), options),
            "<s> [INST] Be brief.\n\nHi [/INST]  Hello! </s> [INST] Bye [/INST]");
  EXPECT_EQ(render_chat(config_from(kMistral), conversation(false), options),
            "<s> [INST] Hi [/INST]  Hello! </s> [INST] Bye [/INST]");
  ordered_json bad = conversation(false);
  bad[1]["role"] = "user";
  try {
    render_chat(config_from(kMistral), bad, options);
    ADD_FAILURE() << "two user turns in a row must raise";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "chat template line 11: After the optional system message, conversation roles must alternate "
              "user/assistant/user/assistant/...");
  }
}

TEST(ChatTemplateStyles, Llama2WithSystemBlock) {
  const ChatRenderOptions options;
  EXPECT_EQ(render_chat(config_from(kLlama2), conversation(true), options),
            "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] Bye [/INST]");
  EXPECT_EQ(render_chat(config_from(kLlama2), conversation(false), options),
            "<s>[INST] Hi [/INST] Hello! </s><s>[INST] Bye [/INST]");
  ordered_json bad = conversation(false);
  bad.erase(1);
  EXPECT_THROW(render_chat(config_from(kLlama2), bad, options), Error);
}

// ---- goldens from transformers' apply_chat_template ----

void check_goldens(const std::string& name) {
  const std::string dir = test::testdata_dir() + "/tokenizers/" + name;
  const ChatTemplate tmpl(load_chat_template_config(dir));
  std::ifstream in(dir + "/chat_golden.jsonl");
  ASSERT_TRUE(in.good()) << dir;
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const ordered_json item = ordered_json::parse(line);
    ChatRenderOptions options;
    const auto& kwargs = item["kwargs"];
    options.add_generation_prompt = kwargs.value("add_generation_prompt", false);
    if (kwargs.contains("enable_thinking")) options.enable_thinking = kwargs["enable_thinking"].get<bool>();
    SCOPED_TRACE(name + " line " + std::to_string(lines + 1));
    EXPECT_EQ(tmpl.render(item["messages"], options), item["rendered"].get<std::string>());
    ++lines;
  }
  EXPECT_GT(lines, 0);
}

TEST(ChatTemplateGolden, Llama31) { check_goldens("llama3_1"); }
TEST(ChatTemplateGolden, Qwen3) { check_goldens("qwen3"); }

// ---- configuration and variables ----

TEST(ChatTemplateConfig, ReadsTokenizerConfigForms) {
  const ChatTemplateConfig llama = load_chat_template_config(test::testdata_dir() + "/tokenizers/llama3_1");
  EXPECT_EQ(llama.bos_token, "<|begin_of_text|>");
  EXPECT_EQ(llama.eos_token, "<|eot_id|>");
  EXPECT_NE(llama.chat_template.find("start_header_id"), std::string::npos);

  const nlohmann::json listed = nlohmann::json::parse(R"({
    "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
    "eos_token": null,
    "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  const ChatTemplateConfig config = chat_template_config_from_json(listed, "test");
  EXPECT_EQ(config.chat_template, "D");
  EXPECT_EQ(config.bos_token, "<s>");
  EXPECT_EQ(config.eos_token, "");

  const nlohmann::json no_default = nlohmann::json::parse(R"({"chat_template": [{"name": "x", "template": "T"}]})");
  EXPECT_THROW(chat_template_config_from_json(no_default, "test"), Error);
  EXPECT_THROW(load_chat_template_config(test::testdata_dir() + "/tokenizers/llama2"), Error);  // has no template
}

TEST(ChatTemplateVariables, OnlyWhitelistedNames) {
  ChatTemplateConfig config =
      config_from("{{ tools is none }} {{ enable_thinking is defined }} {{ date_string is defined }} {{ bos_token }}");
  ChatRenderOptions options;
  EXPECT_EQ(render_chat(config, ordered_json::array(), options), "True False False <s>");
  options.enable_thinking = false;
  options.date_string = "26 Jul 2024";
  options.variables = {{"tools", ordered_json::array()}, {"bos_token", "<B>"}};
  EXPECT_EQ(render_chat(config, ordered_json::array(), options), "False True True <B>");
  options.variables = {{"secret", 1}};
  try {
    render_chat(config, ordered_json::array(), options);
    ADD_FAILURE() << "a variable outside the whitelist must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'secret' is not allowed"), std::string::npos) << e.what();
  }
  options.variables = {{"messages", ordered_json::array()}};
  EXPECT_THROW(render_chat(config, ordered_json::array(), options), Error);
  EXPECT_THROW(render_chat(config, ordered_json::object(), ChatRenderOptions{}), Error);  // messages must be a list
  // A tokenizer without a BOS token leaves bos_token undefined, as transformers does.
  config.chat_template = "{{ bos_token is defined }}";
  EXPECT_EQ(render_chat(config, ordered_json::array(), {}), "True");
  config.bos_token = "";
  EXPECT_EQ(render_chat(config, ordered_json::array(), {}), "False");
}

TEST(ChatTemplateVariables, KeepsJsonKeyOrder) {
  const ordered_json messages = ordered_json::parse(
      R"([{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"zeta": 1, "alpha": [2.0, "é"]}}}]}])");
  EXPECT_EQ(render_chat(config_from("{{ messages[0].tool_calls[0].function.arguments|tojson }}"), messages, {}),
            R"({"zeta": 1, "alpha": [2.0, "é"]})");
}

}  // namespace
}  // namespace fg
