// server/model_endpoints.cpp — see model_endpoints.h.
#include "server/model_endpoints.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "core/json/strict_json.h"
#include "core/utf8.h"
#include "server/api_error.h"

namespace fg::server {

std::string percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      unsigned byte = 0;
      const char* end = text.data() + i + 3;
      if (std::from_chars(text.data() + i + 1, end, byte, 16).ptr == end) {
        out += static_cast<char>(byte);
        i += 2;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

nlohmann::ordered_json model_object(const ModelContext& model, const std::string& name, int64_t created) {
  return {{"id", name},
          {"object", "model"},
          {"created", created},
          {"owned_by", "fullgraph"},
          {"max_model_len", model.max_model_len},
          {"vocab_size", model.vocab_size}};
}

nlohmann::ordered_json model_list(const ModelContext& model, int64_t created) {
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  for (const std::string& name : model.served_names) data.push_back(model_object(model, name, created));
  return {{"object", "list"}, {"data", std::move(data)}};
}

nlohmann::ordered_json retrieve_model(const ModelContext& model, std::string_view path_id, int64_t created) {
  const std::string id = percent_decode(path_id);
  if (std::find(model.served_names.begin(), model.served_names.end(), id) != model.served_names.end())
    return model_object(model, id, created);
  // Quoted only when it is text: a decoded path can hold any bytes.
  const std::string quoted = utf8::is_valid(id) ? fmt::format(" '{}'", clip_for_message(id, 200)) : "";
  throw ApiError(404,
                 fmt::format("The model{} does not exist; this server serves '{}'", quoted,
                             model.served_names.empty() ? std::string() : model.served_names.front()),
                 "model", "model_not_found");
}

}  // namespace fg::server
