// server/structured_output_request.cpp — see structured_output_request.h.
#include "server/structured_output_request.h"

#include <fmt/format.h>

#include "grammar/grammar_compiler.h"
#include "server/api_error.h"

namespace fg::server {

void check_structured_output(const RequestSpec& spec, const ModelContext& model) {
  if (!spec.structured_output) return;
  const StructuredOutput& c = *spec.structured_output;
  if (model.grammar == nullptr) {
    if (model.tokenizer == nullptr)
      bad_request(c.source, fmt::format("'{}': structured outputs need the model's tokenizer, and this model has none",
                                        c.source));
    bad_request(c.source, fmt::format("'{}': structured outputs are not available on this server", c.source));
  }
  try {
    model.grammar->compile(c);
  } catch (const Error& e) {
    bad_request(c.source, fmt::format("'{}': {}", c.source, e.what()));
  }
}

}  // namespace fg::server
