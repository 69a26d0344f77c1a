"""Seeded random JSON schemas for the grammar differential test (make_mask_goldens.py).

Every schema draws from what xgrammar's JSON-schema converter supports: objects with required and
optional properties (additionalProperties false, absent, or a schema; keys with spaces, non-ASCII
letters, a "$ref" key),
arrays (items, prefixItems, minItems / maxItems), enum and const, integers and numbers with
inclusive and exclusive bounds, strings with minLength / maxLength, a pattern or a format, booleans,
null, type lists, $ref into $defs (chains of references and a recursive one), anyOf / oneOf, and
nesting of all of these. Strings are mostly bounded so that a random walk through the grammar does
not stay inside one string for its whole length.
"""
import json
import random

WORDS = ["alpha", "beta", "red", "x", "yes", "no", "été", "数字", "a b", 'say "hi"', "back\\slash", "", "🎉"]
# No key holds a quote or a backslash: xgrammar 0.1.27 writes such a key into its EBNF unescaped
# and refuses its own grammar ("EBNF lexer error ... Unexpected character"), on both sides alike.
KEYS = ["name", "id", "count", "tags", "value", "items", "kind", "note", "with space", "ünï", "k", "$ref", "日付"]
PATTERNS = ["^[a-z]{1,5}$", "^[0-9]{2}-[0-9]{2}$", "^(on|off)$", "^[A-Z][a-z]*$", "^\\d{3}$", "^[a-f0-9]{4,8}$",
            "^(ab)+$", "^x?y{1,3}z*$", "^\\w+@\\w+\\.com$", "^[^\"\\\\]{0,4}$", "^é|ü$"]
FORMATS = ["date", "time", "date-time", "email", "ipv4", "ipv6", "uuid", "hostname", "uri", "duration"]


class SchemaMaker:
    """One schema's drawing: the random source and the $defs the schema collects on the way."""

    def __init__(self, rng):
        self.rng = rng
        self.defs = {}

    def any(self, depth):
        """A schema of any kind; containers only while `depth` allows."""
        leaves = [self.string, self.string, self.pattern, self.format, self.enum, self.const, self.integer,
                  self.integer, self.number, self.boolean, self.null, self.nullable]
        nodes = [self.object, self.array, self.ref, self.anyof, self.tuple]
        pool = leaves + nodes * 2 if depth < 3 else leaves
        return self.rng.choice(pool)(depth)

    def string(self, depth):
        lo = self.rng.randint(0, 3)
        schema = {"type": "string", "minLength": lo}
        if self.rng.random() < 0.85:
            schema["maxLength"] = lo + self.rng.randint(0, 8)
        return schema

    def pattern(self, depth):
        return {"type": "string", "pattern": self.rng.choice(PATTERNS)}

    def format(self, depth):
        return {"type": "string", "format": self.rng.choice(FORMATS)}

    def enum(self, depth):
        values = self.rng.sample(WORDS, self.rng.randint(1, 4))
        if self.rng.random() < 0.4:
            values += self.rng.sample([0, 1, -7, 2.5, True, None, [1, 2], {"k": "v"}], self.rng.randint(1, 2))
        return {"enum": values}

    def const(self, depth):
        return {"const": self.rng.choice(WORDS + [42, -1.5, False, None, {"a": [1, "b"]}])}

    def integer(self, depth):
        schema = {"type": "integer"}
        lo = self.rng.randint(-1000, 1000)
        bounds = self.rng.choice(["both", "both", "min", "max", "exclusive", "none"])
        if bounds in ("both", "min"):
            schema["minimum"] = lo
        if bounds in ("both", "max"):
            schema["maximum"] = lo + self.rng.choice([0, 1, 9, 10, 99, 100, 12345])
        if bounds == "exclusive":
            schema["exclusiveMinimum"] = lo
            schema["exclusiveMaximum"] = lo + self.rng.randint(2, 500)
        return schema

    def number(self, depth):
        schema = {"type": "number"}
        lo = round(self.rng.uniform(-100, 100), self.rng.randint(0, 3))
        bounds = self.rng.choice(["both", "min", "max", "exclusive", "none"])
        if bounds in ("both", "min"):
            schema["minimum"] = lo
        if bounds in ("both", "max"):
            schema["maximum"] = lo + self.rng.choice([0.5, 1, 10, 1000])
        if bounds == "exclusive":
            schema["exclusiveMinimum"] = lo
            schema["exclusiveMaximum"] = lo + 50
        return schema

    def boolean(self, depth):
        return {"type": "boolean"}

    def null(self, depth):
        return {"type": "null"}

    def nullable(self, depth):
        return {"type": [self.rng.choice(["string", "integer", "number", "boolean"]), "null"]}

    def object(self, depth):
        keys = self.rng.sample(KEYS, self.rng.randint(1, 5))
        props = {k: self.any(depth + 1) for k in keys}
        schema = {"type": "object", "properties": props,
                  "required": [k for k in keys if self.rng.random() < 0.6]}
        extra = self.rng.random()
        if extra < 0.6:
            schema["additionalProperties"] = False
        elif extra < 0.7:
            schema["additionalProperties"] = {"type": "integer", "minimum": 0, "maximum": 9}
        return schema

    def array(self, depth):
        lo = self.rng.randint(0, 2)
        schema = {"type": "array", "items": self.any(depth + 1), "minItems": lo}
        if self.rng.random() < 0.8:
            schema["maxItems"] = lo + self.rng.randint(0, 3)
        return schema

    def tuple(self, depth):
        items = [self.any(depth + 1) for _ in range(self.rng.randint(1, 3))]
        return {"type": "array", "prefixItems": items, "items": False}

    def anyof(self, depth):
        options = [self.any(depth + 1) for _ in range(self.rng.randint(2, 3))]
        return {self.rng.choice(["anyOf", "anyOf", "oneOf"]): options}

    def ref(self, depth):
        kind = self.rng.choice(["plain", "plain", "chain", "recursive"])
        name = f"def{len(self.defs)}"
        self.defs[name] = {}  # taken before its body is drawn, whose own references come after it
        if kind == "recursive":
            self.defs[name] = {"type": "object", "properties": {
                "value": self.integer(depth), "children": {"type": "array", "items": {"$ref": f"#/$defs/{name}"},
                                                           "maxItems": 2}},
                "required": ["value"], "additionalProperties": False}
        elif kind == "chain":
            self.defs[name] = {"$ref": self.ref(depth + 1)["$ref"]} if depth < 3 else self.string(depth)
        else:
            self.defs[name] = self.any(depth + 1)
        return {"$ref": f"#/$defs/{name}"}


def make_schema(rng):
    """One random schema as a dict: mostly an object at the top, sometimes another kind."""
    maker = SchemaMaker(rng)
    top = rng.random()
    if top < 0.75:
        schema = maker.object(0)
    elif top < 0.85:
        schema = maker.array(0)
    elif top < 0.92:
        schema = maker.anyof(0)
    else:
        schema = maker.any(1)
    if maker.defs:
        schema["$defs"] = maker.defs
    return schema


def make_schemas(seed, count):
    """`count` distinct schemas, as the JSON texts both compilers are given."""
    rng = random.Random(seed)
    texts, seen = [], set()
    while len(texts) < count:
        text = json.dumps(make_schema(rng), ensure_ascii=rng.random() < 0.5)
        if text not in seen:
            seen.add(text)
            texts.append(text)
    return texts
