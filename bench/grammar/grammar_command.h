// bench/grammar/grammar_command.h — `fullgraph bench grammar`: what a structured-output constraint
// costs on the CPU, without a model: building the grammar vocabulary of a tokenizer, compiling a
// JSON schema (bench/grammar/large_schema.json is the standing large one), and filling one mask
// row per token along a random walk through the grammar (the work a constrained request adds to
// each step before the GPU runs it). bench/grammar/xgrammar_python.py times xgrammar's own
// Python package on the same schema and tokenizer, for comparison.
#pragma once

#include <CLI/CLI.hpp>

namespace fg::bench {

void add_grammar_command(CLI::App& bench);

}  // namespace fg::bench
