"""tests/python/tokenizer_corpus.py — seeded random text for tokenizer tests and benchmarks.

Strings mix the things tokenizers get wrong: many scripts (Latin with accents, Cyrillic, CJK,
Arabic, Hebrew, Devanagari, Hangul incl. conjoining jamo), digit runs, white-space runs (tabs,
\\r\\n, NBSP, U+0085, U+2028...), emoji with skin tones, ZWJ sequences, flags and keycaps,
punctuation, contractions, code, combining marks, control characters, characters outside the
Llama-2 vocabulary (byte fallback), and special-token text embedded mid-string ("<s>",
"<|im_start|>", near misses such as "<|im_st").

Used by test_tokenizer_differential.py and bench/bench_tokenizer.py; no third-party imports.
"""
import random
import string

SPECIAL_TEXT = [
    "<s>", "</s>", "<unk>", "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>",
    "<|end_header_id|>", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>",
    "<|reserved_special_token_7|>", "<|im_st", "<s", "</s", "<|", "|>", "<<s>>", "<s><s>", "[INST]", "[/INST]",
    "<mask>", "hello", " world", "café", "cafe\u0301", "foo bar", "<|fim_prefix|>", "Spécial", "sp tok",
]
CONTRACTIONS = ["don't", "I'm", "we'll", "they've", "she'd", "it's", "DON'T", "You'RE", "'s", "'ll", "o'clock",
                "rock'n'roll", "isn\u2019t", "'S", "'M", "can't've", "y'all"]
CODE = [
    "def f(x):\n    return x**2\n", "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}", "#include <stdio.h>",
    "x => x + 1", "SELECT * FROM t WHERE a='b';", "<div class=\"a\">&nbsp;</div>", "    \t  ", "0x1F 0b1010",
    "snake_case_name", "camelCaseWord", "std::vector<int> v{1, 2};", "{\"k\": [1, 2, null]}", "if x != y: pass",
    "\\n\\t\\\\", "a+=b;c-=d", "$HOME/.config", "printf(\"%d\\n\", x);", "\tindented\n\t\tmore",
]
WHITE = [" ", "  ", "\t", "\n", "\r\n", "\r", "\xa0", "\u3000", "\u2009", "\x0b", "\x0c", "\x85", "\u2028",
         "\u2029", "\u200b", "\u202f", "\n\n", " \n", "\t\t"]
PUNCT = string.punctuation + "…—–«»“”‘’¿¡·•§¶†‡‰′″、。，！？「」（）《》：；"
LATIN_ACCENTED = "àáâãäåæçèéêëìíîïñòóôõöøùúûüýÿœšžßÀÉÎÕÜÇŁłŒđĐőűİığĞ"
ZWJ = ["👨\u200d👩\u200d👧\u200d👦", "👩🏽\u200d💻", "🏳\ufe0f\u200d🌈", "🧑\u200d🤝\u200d🧑", "❤\ufe0f\u200d🔥",
       "1\ufe0f\u20e3", "#\ufe0f\u20e3", "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"]


def _chars(rng, lo, hi, n):
    return "".join(chr(rng.randint(lo, hi)) for _ in range(n))


def _word(rng):
    kind = rng.randrange(12)
    n = rng.randint(1, 9)
    if kind == 0:
        return "".join(rng.choice(string.ascii_letters) for _ in range(n))
    if kind == 1:
        return "".join(rng.choice(string.ascii_lowercase + LATIN_ACCENTED) for _ in range(n))
    if kind == 2:
        return _chars(rng, 0x0410, 0x044F, n) + rng.choice(["", "ё", "й"])
    if kind == 3:
        return _chars(rng, 0x4E00, 0x9FFF, n) + rng.choice(["", "。", "，", "の", "です"])
    if kind == 4:
        return _chars(rng, 0x3041, 0x30FF, n)
    if kind == 5:
        return "".join(chr(rng.randint(0x0621, 0x064A)) + rng.choice(["", "", chr(rng.randint(0x064B, 0x0652))])
                       for _ in range(n))
    if kind == 6:
        return "".join(chr(rng.randint(0x05D0, 0x05EA)) + rng.choice(["", "", chr(rng.randint(0x05B0, 0x05BC))])
                       for _ in range(n))
    if kind == 7:
        return "".join(chr(rng.randint(0x0905, 0x0939)) + rng.choice(["", chr(rng.randint(0x093E, 0x094D))])
                       for _ in range(n))
    if kind == 8:
        return _chars(rng, 0xAC00, 0xD7A3, n)
    if kind == 9:  # conjoining jamo: NFC composes them into syllables
        return "".join(chr(rng.randint(0x1100, 0x1112)) + chr(rng.randint(0x1161, 0x1175)) +
                       rng.choice(["", chr(rng.randint(0x11A8, 0x11C2))]) for _ in range(rng.randint(1, 3)))
    if kind == 10:  # Greek, Thai, Georgian, Armenian
        lo, hi = rng.choice([(0x03B1, 0x03C9), (0x0E01, 0x0E30), (0x10D0, 0x10F0), (0x0531, 0x0556)])
        return _chars(rng, lo, hi, n)
    return rng.choice(["the", "of", "and", "Hello", "World", "tokenizer", "inference", "über", "naïve", "straße"])


def _number(rng):
    kind = rng.randrange(7)
    if kind == 0:
        return "".join(rng.choice(string.digits) for _ in range(rng.randint(1, 25)))
    if kind == 1:
        return f"{rng.uniform(-1e6, 1e6):.{rng.randint(0, 6)}f}"
    if kind == 2:
        return f"{rng.randint(0, 10**9):,}"
    if kind == 3:
        return _chars(rng, 0x0660, 0x0669, rng.randint(1, 6))
    if kind == 4:
        return _chars(rng, 0xFF10, 0xFF19, rng.randint(1, 6))
    if kind == 5:
        return _chars(rng, 0x0966, 0x096F, rng.randint(1, 6)) + rng.choice(["", "²", "³", "½", "①"])
    return f"{rng.randint(1, 12)}/{rng.randint(1, 28)}/{rng.randint(1900, 2100)}"


def _emoji(rng):
    kind = rng.randrange(5)
    if kind == 0:
        return chr(rng.randint(0x1F600, 0x1F64F)) + rng.choice(["", chr(rng.randint(0x1F3FB, 0x1F3FF))])
    if kind == 1:
        return chr(rng.randint(0x1F300, 0x1F5FF)) + rng.choice(["", "\ufe0f"])
    if kind == 2:
        return chr(rng.randint(0x1F1E6, 0x1F1FF)) + chr(rng.randint(0x1F1E6, 0x1F1FF))
    if kind == 3:
        return rng.choice(ZWJ)
    return chr(rng.randint(0x1F900, 0x1F9FF))


def _combining(rng):
    base = rng.choice("aeiouAEIOUnczsyk") if rng.random() < 0.8 else rng.choice(["", " ", "\u0915"])
    return base + "".join(chr(rng.randint(0x0300, 0x036F)) for _ in range(rng.randint(1, 3)))


def _rare(rng):
    # Mostly characters outside Llama-2's vocabulary (byte fallback) and odd code points.
    lo, hi = rng.choice([(0x20000, 0x2A6DF), (0x1D400, 0x1D7FF), (0x10330, 0x1034A), (0xE000, 0xF8FF),
                         (0x2600, 0x27BF), (0x0000, 0x001F), (0x007F, 0x009F), (0x2190, 0x22FF), (0xFFF0, 0xFFFD),
                         (0x1F000, 0x1F0FF), (0x0E80, 0x0EFF)])
    return _chars(rng, lo, hi, rng.randint(1, 4))


def fragment(rng):
    kind = rng.randrange(100)
    if kind < 30:
        return _word(rng)
    if kind < 40:
        return _number(rng)
    if kind < 50:
        return "".join(rng.choice(WHITE) for _ in range(rng.randint(1, 6)))
    if kind < 56:
        return _emoji(rng)
    if kind < 64:
        return "".join(rng.choice(PUNCT) for _ in range(rng.randint(1, 4)))
    if kind < 70:
        return rng.choice(CONTRACTIONS)
    if kind < 76:
        return rng.choice(CODE)
    if kind < 81:
        return _combining(rng)
    if kind < 88:
        return rng.choice(SPECIAL_TEXT)
    if kind < 94:
        return _rare(rng)
    if kind < 97:
        return rng.choice("a. ab-\n!") * rng.randint(10, 120)
    return rng.choice(["https://example.com/a/b?c=1&d=%20#x", "someone@example.org", "C:\\Users\\x\\file.txt",
                       "2026-11-30T07:37:39Z", "$1,299.99", "100%", "e.g.", "U.S.A.", "v1.2.3-rc.4"])


def random_string(rng):
    seps = ["", " ", " ", " ", "\n", ", ", "\t", ""]
    parts = [fragment(rng) for _ in range(rng.randint(1, 12))]
    out = parts[0]
    for p in parts[1:]:
        out += rng.choice(seps) + p
    return out


def corpus(seed, count):
    rng = random.Random(seed)
    return [random_string(rng) for _ in range(count)]


def document(rng, min_chars):
    """One line of mixed text of at least min_chars characters and no newline (for benchmarks)."""
    out = []
    n = 0
    while n < min_chars:
        s = random_string(rng).replace("\n", " ").replace("\r", " ").replace("\x85", " ")
        s = s.replace("\u2028", " ").replace("\u2029", " ").replace("\x0b", " ").replace("\x0c", " ")
        out.append(s)
        n += len(s) + 1
    return " ".join(out)
