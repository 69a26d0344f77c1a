// tokenizer/tokenizer.cpp — the encode and decode pipelines over the loaded parts, and vocabulary
// queries. Loading lives in tokenizer_json.cpp.
#include "tokenizer/tokenizer.h"

#include "core/error.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace fg {

namespace {

// Working memory of one encode() call, so that the pieces of a text reuse the same buffers.
struct EncodeState {
  std::vector<int32_t> ids;
  std::vector<Segment> inner;
  std::vector<ByteSpan> pieces;
  std::string normalized;
  std::string pre_tokenized;
  BpeScratch scratch;
};

// Pre-tokenizes one normalized stretch and runs the model over each piece. `at_text_start` tells
// whether the stretch begins the input (Metaspace prepends ▁ only there with prepend_scheme=first).
void tokenize_stretch(const Tokenizer::Impl& t, std::string_view text, bool at_text_start, EncodeState& s) {
  s.pieces.clear();
  const std::string_view split = t.pre_tokenizer.split(text, at_text_start, s.pre_tokenized, s.pieces);
  for (const ByteSpan& p : s.pieces) t.model.tokenize(split.substr(p.begin, p.end - p.begin), s.ids, s.scratch);
}

}  // namespace

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const Impl& t = *impl_;
  if (const size_t bad = utf8::first_invalid(text); bad != std::string_view::npos)
    fail("cannot encode text that is not valid UTF-8 (byte {} of {} is 0x{:02X})", bad, text.size(),
         static_cast<uint8_t>(text[bad]));
  EncodeState s;
  s.ids.reserve(text.size() / 3 + 4);
  std::vector<Segment> segments;
  t.added.split(text, /*normalized_text=*/false, segments);
  for (const Segment& seg : segments) {
    if (seg.id >= 0) {
      s.ids.push_back(seg.id);
      continue;
    }
    std::string_view stretch = text.substr(seg.begin, seg.end - seg.begin);
    if (!t.normalizer.is_identity()) {
      s.normalized.assign(stretch);
      t.normalizer.normalize(s.normalized);
      stretch = s.normalized;
    }
    if (!t.added.has_normalized_tokens()) {
      tokenize_stretch(t, stretch, seg.begin == 0, s);
      continue;
    }
    s.inner.clear();
    t.added.split(stretch, /*normalized_text=*/true, s.inner);
    for (const Segment& sub : s.inner) {
      if (sub.id >= 0) s.ids.push_back(sub.id);
      else tokenize_stretch(t, stretch.substr(sub.begin, sub.end - sub.begin), seg.begin == 0 && sub.begin == 0, s);
    }
  }
  if (add_special_tokens) t.post_processor.apply(s.ids);
  return std::move(s.ids);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  return decode(ids, skip_special_tokens, DecodeScope{});
}

const StreamPlan& Tokenizer::stream_plan() const { return impl_->decoder.stream_plan(); }

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens, DecodeScope scope) const {
  const Impl& t = *impl_;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) {
    std::string_view token;
    if (const AddedToken* added = t.added.by_id(id)) token = added->spelling;
    else if (id >= 0 && id < t.model.vocab_size()) token = t.model.id_to_token(id);
    else continue;  // no such token
    if (skip_special_tokens && t.added.skipped_as_special(token)) continue;
    tokens.emplace_back(token);
  }
  return t.decoder.decode(tokens, scope);
}

int64_t Tokenizer::vocab_size() const { return int64_t{impl_->model.vocab_size()} + impl_->added.extra_ids(); }

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  int32_t id = impl_->added.find(token);
  if (id < 0) id = impl_->model.token_to_id(token);
  if (id < 0) return std::nullopt;
  return id;
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (const AddedToken* added = impl_->added.by_id(id)) return added->spelling;
  if (id >= 0 && id < impl_->model.vocab_size()) return std::string(impl_->model.id_to_token(id));
  return std::nullopt;
}

bool Tokenizer::is_special(int32_t id) const {
  if (const AddedToken* added = impl_->added.by_id(id)) return impl_->added.skipped_as_special(added->spelling);
  return id >= 0 && id < impl_->model.vocab_size() && impl_->added.skipped_as_special(impl_->model.id_to_token(id));
}

bool Tokenizer::is_added(int32_t id) const { return impl_->added.by_id(id) != nullptr; }

bool Tokenizer::is_fallback_byte(int32_t id) const {
  // Added tokens go through the decoder too, so their text counts the same way.
  if (const AddedToken* added = impl_->added.by_id(id)) return impl_->decoder.is_fallback_byte(added->spelling);
  if (id < 0 || id >= impl_->model.vocab_size()) return false;
  return impl_->decoder.is_fallback_byte(impl_->model.id_to_token(id));
}

const std::string& Tokenizer::source() const { return impl_->source; }

}  // namespace fg
