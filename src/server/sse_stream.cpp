// server/sse_stream.cpp — see sse_stream.h.
#include "server/sse_stream.h"

namespace fg::server {

std::string sse_event(const ojson& data) {
  // Engine text is valid UTF-8; `replace` only guards against a bug turning into a throw mid-stream.
  return "data: " + data.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n\n";
}

StreamFormatter::StreamFormatter(Endpoint endpoint, ResponseHeader header, int64_t n, int32_t top_logprobs,
                                 bool include_usage, LogprobFormatter format)
    : endpoint_(endpoint),
      header_(std::move(header)),
      top_logprobs_(top_logprobs),
      include_usage_(include_usage),
      format_(std::move(format)),
      cursors_(static_cast<size_t>(n), format_.start()) {}

StreamFormatter::StreamFormatter(ResponseHeader header, const ParsedRequest& request, LogprobFormatter format)
    : StreamFormatter(request.endpoint, std::move(header), request.n, request.top_logprobs, request.include_usage,
                      std::move(format)) {
  continuous_usage_ = request.continuous_usage;
  prompt_tokens_ = static_cast<int64_t>(request.prompt.size());
  if (request.echo) echo_text_ = request.echo_text;
  echoed_.assign(static_cast<size_t>(request.n), echo_text_.empty());
  echo_logprobs_ = request.echo && request.top_logprobs >= 0;
  if (echo_logprobs_) prompt_ = request.prompt;
  prompt_scored_.resize(static_cast<size_t>(request.n));
  if (request.endpoint == Endpoint::kChatCompletions && !request.chat_output.plain())
    chat_streams_.assign(static_cast<size_t>(request.n), ChatDeltaStream(request.chat_output));
}

std::string StreamFormatter::begin() {
  if (endpoint_ != Endpoint::kChatCompletions) return "";
  std::string out;
  for (size_t i = 0; i < cursors_.size(); ++i) {
    ojson chunk = chat_chunk(header_, static_cast<int64_t>(i), {{"role", "assistant"}, {"content", ""}}, nullptr,
                             FinishReason::kNone, std::nullopt, include_usage_);
    if (continuous_usage_) chunk["usage"] = usage_json({prompt_tokens_, 0});
    out += sse_event(chunk);
  }
  return out;
}

std::string StreamFormatter::delta(int64_t index, const RequestOutput& output) {
  if (!output.prompt_logprobs.empty()) prompt_scored_.at(static_cast<size_t>(index)) = output.prompt_logprobs;
  // A token's logprobs come once the engine has settled that it belongs to the output (they may lag
  // its chunk while its text is held back); a chunk without any has "logprobs": null.
  const bool with_logprobs = top_logprobs_ >= 0 && !output.logprobs.empty();
  // A token whose text is still held back (an incomplete character, a possible stop string)
  // gets a chunk with empty text, as vLLM sends: clients time tokens by chunks.
  if (output.token_ids.empty() && !output.finished) return "";
  const FinishReason finish = output.finished ? output.finish_reason : FinishReason::kNone;
  ojson chunk;
  if (endpoint_ == Endpoint::kCompletions) {
    LogprobFormatter::Cursor& cursor = cursors_.at(static_cast<size_t>(index));
    ojson logprobs = nullptr;
    std::string text = output.text;
    if (!echoed_.empty() && !echoed_.at(index)) {
      echoed_.at(index) = true;
      text.insert(0, echo_text_);
      if (echo_logprobs_) logprobs = format_.echoed_prompt(prompt_, prompt_scored_.at(static_cast<size_t>(index)), cursor);
    }
    if (with_logprobs) {
      ojson generated = format_.completion(output.logprobs, cursor);
      if (logprobs.is_null())
        logprobs = std::move(generated);
      else
        LogprobFormatter::append_completion(logprobs, generated);
    }
    chunk = completion_chunk(header_, index, text, std::move(logprobs), finish, output.stop_reason, include_usage_);
  } else {
    ojson logprobs = nullptr;
    if (with_logprobs)
      logprobs = {{"content", format_.chat_content(output.logprobs, cursors_.at(static_cast<size_t>(index)))}};
    ojson delta = ojson::object();
    ojson finish_json = finish_reason_json(finish);
    if (!chat_streams_.empty()) {
      ChatDeltaStream& stream = chat_streams_.at(static_cast<size_t>(index));
      delta = stream.feed(output.text, output.finished);
      if (output.finished && stream.sent_tool_calls()) finish_json = "tool_calls";
      if (delta.empty() && !output.finished) delta["content"] = "";  // a chunk per token, as vLLM sends
    } else if (!output.text.empty() || !output.finished) {
      delta["content"] = output.text;
    }
    chunk = chat_chunk(header_, index, std::move(delta), std::move(logprobs), finish, output.stop_reason,
                       include_usage_);
    chunk["choices"][0]["finish_reason"] = std::move(finish_json);
  }
  if (continuous_usage_) chunk["usage"] = usage_json({prompt_tokens_, output.num_generated_tokens});
  return sse_event(chunk);
}

std::string StreamFormatter::end(const Usage& usage) {
  std::string out;
  if (include_usage_)
    out += sse_event(
        usage_chunk(header_, endpoint_ == Endpoint::kCompletions ? "text_completion" : "chat.completion.chunk", usage));
  out += kSseDone;
  return out;
}

}  // namespace fg::server
