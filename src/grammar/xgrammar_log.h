// grammar/xgrammar_log.h — how xgrammar's own failures reach fullgraph (for grammar/ only).
//
// xgrammar is built with XGRAMMAR_LOG_CUSTOMIZE (cmake/xgrammar.cmake): its log lines go to
// fg::log ("xgrammar: ...", its warnings at warning level, the rest at debug) and its failed
// checks are thrown as fg::Error carrying the message alone, without its source file and line.
// It also throws std::runtime_error subclasses of its own (InvalidJSONSchemaError, ...).
#pragma once

#include <exception>
#include <string>

namespace fg::grammar_detail {

// The message of an exception thrown by xgrammar, cut to `max_bytes` (at a character boundary,
// saying how long it was), so that a refusal never echoes a whole schema or grammar back.
std::string xgrammar_message(const std::exception& e, size_t max_bytes = 400);

}  // namespace fg::grammar_detail
