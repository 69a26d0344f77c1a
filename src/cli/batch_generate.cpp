// cli/batch_generate.cpp — see batch_generate.h.
#include "cli/batch_generate.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/log.h"
#include "core/progress_bar.h"
#include "engine/request_json.h"
#include "server/chat_tools.h"
#include "server/openai_request.h"
#include "server/request_reading.h"
#include "server/structured_output_request.h"

namespace fg::cli {

namespace {

struct BatchItem {
  RequestSpec spec;
  std::vector<int32_t> tokens;
  std::string text;
  nlohmann::json logprobs = nlohmann::json::array();
  FinishReason reason = FinishReason::kNone;
  std::optional<std::variant<int32_t, std::string>> stop_reason;
  int64_t cached_tokens = 0;
  bool done = false;
  server::ChatOutputOptions chat_output;  // a "messages" line with tools: how its answer is read
};

// A line's prompt, read as the server reads a request's: "prompt" text (with add_special_tokens,
// default true), "prompt_ids", or chat "messages" (with add_generation_prompt,
// continue_final_message, add_special_tokens, chat_template_kwargs, tools and tool_choice, whose
// constraint goes into `item`); then truncate_prompt_tokens.
std::vector<int32_t> prompt_of(const nlohmann::json& line, const server::ModelContext& model, const EngineSetup& setup,
                               size_t number, BatchItem& item) {
  const int given = line.contains("prompt") + line.contains("prompt_ids") + line.contains("messages");
  FG_CHECK(given == 1, "line {}: give exactly one of \"prompt\", \"prompt_ids\" and \"messages\"", number);
  std::vector<int32_t> out;
  if (line.contains("prompt_ids")) {
    const nlohmann::json& ids = line["prompt_ids"];
    FG_CHECK(ids.is_array() && !ids.empty(), "line {}: \"prompt_ids\" must be a non-empty list of token ids", number);
    for (const auto& id : ids) {
      FG_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() <= INT32_MAX,
               "line {}: \"prompt_ids\" holds {}, not a token id", number, id.dump());
      out.push_back(id.get<int32_t>());
    }
  } else {
    FG_CHECK(setup.tokenizer != nullptr, "line {}: text prompts need a tokenizer, and {} has none (use prompt_ids)",
             number, setup.source);
    if (line.contains("prompt")) {
      FG_CHECK(line["prompt"].is_string(), "line {}: \"prompt\" must be a string", number);
      bool add_special_tokens = true;
      if (const auto* v = server::field(line, "add_special_tokens"))
        add_special_tokens = server::read_bool(*v, "add_special_tokens");
      out = setup.tokenizer->encode(line["prompt"].get<std::string>(), add_special_tokens);
    } else {
      server::ChatPromptOptions options = server::read_chat_prompt_options(line);
      server::ChatTools tools = server::read_chat_tools(line, options, model);
      if (!tools.template_tools.is_null()) options.template_variables.emplace_back("tools", tools.template_tools);
      out = server::chat_prompt_tokens(line, model, options);
      item.chat_output = std::move(tools.output);
      if (tools.constraint) item.spec.structured_output = std::move(tools.constraint);
    }
  }
  bool truncated = false;
  server::truncate_prompt(line, model, out, truncated);
  return out;
}

nlohmann::json logprobs_json(const OutputLogprobs& entry) {
  nlohmann::json top = nlohmann::json::array();
  for (const auto& [id, value] : entry.logprobs.top) top.push_back({{"id", id}, {"logprob", value}});
  return {{"id", entry.token}, {"logprob", entry.logprobs.logprob}, {"top", top}};
}

std::string output_rate(double seconds, int64_t generated) {
  return fmt::format("{:.0f} output tok/s", seconds > 0 ? generated / seconds : 0.0);
}

}  // namespace

void run_batch_generate(const BatchGenerateOptions& o, const GpuBackendFactory& gpu) {
  std::ifstream in(o.prompts_file);
  FG_CHECK(in.good(), "--prompts: cannot read {}", o.prompts_file);
  const auto log = log::info_line;
  std::unique_ptr<EngineSetup> setup = build_engine(o.engine, gpu, log);
  Engine& engine = *setup->engine;
  // What the server's prompt readers need of the model.
  std::unique_ptr<ChatTemplate> chat_template;
  if (!setup->chat.chat_template.empty()) chat_template = std::make_unique<ChatTemplate>(setup->chat);
  const server::ModelContext model = model_context(*setup, chat_template.get(), setup->source);

  // Every line is parsed and checked before anything runs: a bad line costs no work.
  std::vector<BatchItem> items;
  std::string text;
  for (size_t number = 1; std::getline(in, text); ++number) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json line;
    try {
      line = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      fail("{} line {}: not JSON ({})", o.prompts_file, number, e.what());
    }
    FG_CHECK(line.is_object(), "{} line {}: expected a JSON object", o.prompts_file, number);
    BatchItem item;
    item.spec.stop.max_tokens = o.default_max_tokens;
    try {
      std::optional<StructuredOutput> tool_constraint;
      item.spec.prompt = prompt_of(line, model, *setup, number, item);
      std::swap(tool_constraint, item.spec.structured_output);
      read_request_fields(line, item.spec, setup->generation.sampling, setup->config.vocab_size);
      FG_CHECK(!(tool_constraint && item.spec.structured_output),
               "tool_choice and '{}' both constrain the answer: give one of them",
               item.spec.structured_output ? item.spec.structured_output->source : "");
      if (tool_constraint) item.spec.structured_output = std::move(tool_constraint);
      if (item.spec.structured_output)
        item.spec.structured_output_after = server::constraint_start_token(item.chat_output, model);
      server::check_structured_output(item.spec, model);  // a bad constraint fails here, before anything runs
    } catch (const Error& e) {
      fail("{} line {}: {}", o.prompts_file, number, e.what());
    }
    items.push_back(std::move(item));
  }
  FG_CHECK(!items.empty(), "--prompts {}: no prompts", o.prompts_file);

  size_t finished = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    BatchItem* item = &items[i];
    item->spec.on_output = [item, &finished](const RequestOutput& d) {
      item->tokens.insert(item->tokens.end(), d.token_ids.begin(), d.token_ids.end());
      item->text += d.text;
      // The engine's logprobs end where the text ends (a stop string cuts them too).
      for (const OutputLogprobs& entry : d.logprobs) item->logprobs.push_back(logprobs_json(entry));
      if (d.finished) {
        item->done = true;
        item->reason = d.finish_reason;
        item->stop_reason = d.stop_reason;
        item->cached_tokens = d.num_cached_tokens;
        ++finished;
      }
    };
  }
  const auto start = std::chrono::steady_clock::now();
  const auto seconds_since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  for (size_t i = 0; i < items.size(); ++i) {
    try {
      engine.submit(items[i].spec);
    } catch (const Error& e) {
      fail("{} request {}: {}", o.prompts_file, i + 1, e.what());
    }
  }
  ProgressBar bar("requests", items.size(), o.engine.progress);
  while (engine.step()) bar.update(finished, output_rate(seconds_since_start(), engine.stats().generated_tokens));
  const double seconds = seconds_since_start();
  const EngineStats stats = engine.stats();
  bar.update(finished);
  bar.finish(output_rate(seconds, stats.generated_tokens));

  std::ofstream file;
  if (!o.output_file.empty()) {
    file.open(o.output_file);
    FG_CHECK(file.good(), "--output: cannot write {}", o.output_file);
  }
  for (size_t i = 0; i < items.size(); ++i) {
    const BatchItem& item = items[i];
    nlohmann::json out = {{"index", i},
                          {"prompt_tokens", item.spec.prompt.size()},
                          {"cached_tokens", item.cached_tokens},
                          {"token_ids", item.tokens},
                          {"finish_reason", finish_reason_name(item.reason)}};
    if (setup->tokenizer) out["text"] = item.text;
    if (item.stop_reason) {
      if (std::holds_alternative<int32_t>(*item.stop_reason)) out["stop_reason"] = std::get<int32_t>(*item.stop_reason);
      else out["stop_reason"] = std::get<std::string>(*item.stop_reason);
    }
    if (item.spec.sampling.num_logprobs >= 0) out["logprobs"] = item.logprobs;
    if (!item.chat_output.plain()) {
      bool tool_calls = false;
      out["message"] = server::chat_message(item.text, item.chat_output, tool_calls);
      if (tool_calls) out["finish_reason"] = "tool_calls";
    }
    const std::string line = out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (file.is_open()) file << line << '\n';
    else fmt::print("{}\n", line);
  }

  const KvBlockManager::Stats& kv = setup->blocks->stats();
  fmt::print(stderr,
             "fullgraph: {} requests in {:.2f} s: {} prompt tokens, {} generated; {:.1f} output tok/s, {:.1f} total "
             "tok/s\n",
             items.size(), seconds, stats.prompt_tokens, stats.generated_tokens, stats.generated_tokens / seconds,
             (stats.prompt_tokens + stats.generated_tokens) / seconds);
  fmt::print(stderr,
             "fullgraph: {} steps, mean batch {:.1f} requests, {:.1f}% graph replays ({} graph, {} eager), {} "
             "preemptions, prefix cache hit {}/{} tokens\n",
             stats.steps, stats.steps ? double(stats.scheduled_requests) / stats.steps : 0.0,
             stats.steps ? 100.0 * stats.graph_steps / stats.steps : 0.0, stats.graph_steps, stats.eager_steps,
             engine.num_preemptions(), kv.prefix_hit_tokens, kv.prefix_query_tokens);
}

}  // namespace fg::cli
