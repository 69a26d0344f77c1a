// server/structured_output_request.h — a request's output constraint, checked before the request
// is queued. The constraint itself is read with the other request fields (engine/
// structured_output_json.h: response_format, structured_outputs, guided_*, one at most); here it
// is compiled for the served model, so that a schema, regex, choice list or grammar that does not
// compile is a 400 naming the field it came from ("response_format.json_schema.schema",
// "structured_outputs.regex", "guided_grammar", ...), and the engine's own compile of it later
// is a hit in the compiler's cache.
#pragma once

#include "engine/engine.h"
#include "server/model_context.h"

namespace fg::server {

// Throws ApiError (400, param: the constraint's field) when `spec` carries a constraint that the
// model cannot take: it has no grammar compiler (no tokenizer), or the constraint does not compile.
// Compiling can take a while for a large schema (tens of milliseconds; seconds for the largest),
// and runs on the calling thread; a constraint seen before costs a cache lookup.
void check_structured_output(const RequestSpec& spec, const ModelContext& model);

}  // namespace fg::server
