// server/ignored_fields.cpp — see ignored_fields.h.
#include "server/ignored_fields.h"

#include <fmt/format.h>

#include <array>
#include <mutex>
#include <set>

#include "core/log.h"
#include "server/api_error.h"
#include "server/request_reading.h"

namespace fg::server {

namespace {

using nlohmann::json;

enum class Expect { kBool, kString, kObject, kTextModalities };

struct IgnoredField {
  std::string_view name;
  Expect type;
};

// clang-format off
constexpr std::array<IgnoredField, 8> kIgnored = {{
    {"user", Expect::kString},               // an end-user id, for abuse monitoring
    {"safety_identifier", Expect::kString},  // OpenAI's newer name for it
    {"store", Expect::kBool},                // keep the completion in OpenAI's storage
    {"metadata", Expect::kObject},           // tags for stored completions
    {"service_tier", Expect::kString},       // OpenAI's billing and latency tier
    {"prompt_cache_key", Expect::kString},   // a routing hint for OpenAI's prompt cache
    {"reasoning_effort", Expect::kString},   // read by reasoning models' templates; ours do not
    {"modalities", Expect::kTextModalities}, // ["text"] is what we return anyway
}};
// clang-format on

const IgnoredField* find(std::string_view name) {
  for (const IgnoredField& f : kIgnored)
    if (f.name == name) return &f;
  return nullptr;
}

}  // namespace

bool is_ignored_field(std::string_view name) { return find(name) != nullptr; }

void accept_ignored_field(const std::string& name, const json& value) {
  const IgnoredField* f = find(name);
  FG_ASSERT(f != nullptr);
  if (value.is_null()) return;
  switch (f->type) {
    case Expect::kBool: read_bool(value, name); break;
    case Expect::kString: read_string(value, name); break;
    case Expect::kObject:
      if (!value.is_object()) bad_request(name, fmt::format("'{}': expected an object, got {}", name, type_of(value)));
      break;
    case Expect::kTextModalities:
      if (!value.is_array()) bad_request(name, fmt::format("'{}': expected a list, got {}", name, type_of(value)));
      for (const json& m : value)
        if (!m.is_string() || m != "text")
          bad_request(name, fmt::format("'{}': only \"text\" output is supported, got {}", name, excerpt(m)));
      break;
  }
  note_ignored_field(name);
}

bool note_ignored_field(std::string_view name) {
  if (find(name) == nullptr) return false;  // the set stays bounded whatever clients send
  static std::mutex mutex;
  static std::set<std::string, std::less<>> seen;
  {
    std::lock_guard lock(mutex);
    if (seen.contains(name)) return false;
    seen.emplace(name);
  }
  log::info("request field '{}' is accepted and ignored (it changes nothing fullgraph returns; logged once)", name);
  return true;
}

}  // namespace fg::server
