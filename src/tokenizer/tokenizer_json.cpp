// tokenizer/tokenizer_json.cpp — loading tokenizer.json: the top-level fields, the order the parts
// are built in (the model needs to know whether the pre-tokenizer is byte-level; added tokens need
// the model and the normalizer; the post-processor needs the full vocabulary), and refusals of
// top-level settings fullgraph does not implement.
#include "core/error.h"
#include "core/json/strict_json.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"

namespace fg {

struct TokenizerLoader {
  static Tokenizer load(const JsonDocument& doc) {
    const std::string& source = doc.source;
    const nlohmann::json null_value;  // what an absent optional part reads as
    const nlohmann::json empty_list = nlohmann::json::array();
    const JsonView root = doc.root();
    root.require_object();
    root.allow_only({"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer",
                     "post_processor", "decoder", "model"});
    if (auto version = root.get("version"); version && version->as_string() != "1.0")
      version->fail("the tokenizer.json version \"{}\" is not supported (supported: 1.0)", version->as_string());
    for (const char* key : {"truncation", "padding"})
      if (auto v = root.get(key); v && !v->is_null())
        v->fail("{} is not supported (fullgraph never truncates or pads; it must be null)", key);
    const auto part = [&](const char* key) {
      auto v = root.get(key);
      return v ? *v : JsonView(null_value, source, key);
    };

    auto impl = std::make_shared<Tokenizer::Impl>(Tokenizer::Impl{
        source, Normalizer::from_json(part("normalizer")), PreTokenizer::from_json(part("pre_tokenizer")),
        BpeModel{}, AddedVocabulary{}, PostProcessor{}, Decoder{}});
    impl->model = BpeModel::from_json(root["model"], impl->pre_tokenizer.byte_level());
    const auto added = root.get("added_tokens");
    impl->added = AddedVocabulary::from_json(added ? *added : JsonView(empty_list, source, "added_tokens"),
                                             impl->model, impl->normalizer);
    const Tokenizer::Impl& t = *impl;
    const auto token_to_id = [&t](std::string_view token) {
      const int32_t id = t.added.find(token);
      return id >= 0 ? id : t.model.token_to_id(token);
    };
    impl->post_processor = PostProcessor::from_json(part("post_processor"), token_to_id,
                                                    impl->model.vocab_size() + impl->added.extra_ids());
    impl->decoder = Decoder::from_json(part("decoder"));
    return Tokenizer(std::move(impl));
  }
};

Tokenizer Tokenizer::from_json(std::string_view text, const std::string& source) {
  return TokenizerLoader::load(parse_strict_json(text, {source, ""}));
}

Tokenizer Tokenizer::from_file(const std::string& path) { return TokenizerLoader::load(read_json_file(path)); }

}  // namespace fg
