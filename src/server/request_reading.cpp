// server/request_reading.cpp — see request_reading.h.
#include "server/request_reading.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/json/strict_json.h"
#include "server/openai_request.h"

namespace fg::server {

using nlohmann::json;

const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string type_of(const json& v) { return v.is_number_integer() ? "integer" : v.type_name(); }

std::string excerpt(const json& v, size_t max_bytes) {
  return clip_for_message(v.dump(-1, ' ', false, json::error_handler_t::replace), max_bytes);
}

bool read_bool(const json& v, const std::string& param) {
  if (!v.is_boolean()) bad_request(param, fmt::format("'{}': expected true or false, got {}", param, type_of(v)));
  return v.get<bool>();
}

int64_t read_int(const json& v, const std::string& param, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) bad_request(param, fmt::format("'{}': expected an integer, got {}", param, excerpt(v)));
  const bool huge = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
  const int64_t x = huge ? INT64_MAX : v.get<int64_t>();
  if (huge || x < lo || x > hi)
    bad_request(param, fmt::format("'{}': {} is outside [{}, {}]", param, excerpt(v), lo, hi));
  return x;
}

const std::string& read_string(const json& v, const std::string& param) {
  if (!v.is_string()) bad_request(param, fmt::format("'{}': expected a string, got {}", param, type_of(v)));
  return v.get_ref<const std::string&>();
}

std::vector<int32_t> read_token_ids(const json& list, const std::string& param, const ModelContext& model) {
  std::vector<int32_t> ids;
  ids.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const json& id = list[i];
    if (!id.is_number_integer())
      bad_request(param, fmt::format("'{}[{}]': expected a token id, got {}", param, i, excerpt(id)));
    const bool huge = id.is_number_unsigned() && id.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
    const int64_t x = huge ? INT64_MAX : id.get<int64_t>();
    if (huge || x < 0 || x >= model.vocab_size)
      bad_request(param, fmt::format("'{}[{}]': {} is not a token id of this model (vocabulary of {})", param, i,
                                     excerpt(id), model.vocab_size));
    ids.push_back(static_cast<int32_t>(x));
  }
  return ids;
}

const std::string& served_model(const json& body, const ModelContext& model) {
  FG_CHECK(!model.served_names.empty(), "the server has no model name");
  const std::string& reported = model.served_names.front();
  if (const json* v = field(body, "model")) {
    const std::string& name = read_string(*v, "model");
    if (std::find(model.served_names.begin(), model.served_names.end(), name) == model.served_names.end())
      throw ApiError(404,
                     fmt::format("The model '{}' does not exist; this server serves '{}'", clip_for_message(name, 200),
                                 reported),
                     "model", "model_not_found");
  }
  return reported;
}

}  // namespace fg::server
