// cli/chat_command.cpp — `fullgraph chat`: reads a line, adds it to the conversation as the
// user's message, and streams the model's answer as the engine produces it, until /exit or the
// end of input. Each turn is read as a chat completion request is (server/openai_request.h): the
// whole conversation rendered through the chat template with the generation prompt, the sampling
// defaults of generation_config.json for what the flags leave out, and the room the context
// leaves as the longest answer. Answers are greedy unless --temperature is given. A turn that
// fails (a conversation grown past the context, say) is reported and the session goes on.
#include "cli/chat_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/chat_history.h"
#include "cli/default_model.h"
#include "cli/engine_setup.h"
#include "core/error.h"
#include "core/log.h"
#include "server/openai_request.h"

namespace fg::cli {

namespace {

struct ChatOptions {
  EngineSetupOptions engine;
  std::string system;
  // The request fields the sampling flags give; those not given take the model's defaults.
  nlohmann::json request = nlohmann::json::object();
  std::optional<int64_t> max_tokens;  // capped by the room left in the context
};

const char* const kCommands = "/reset clears the conversation, /exit (or Ctrl-D) ends the session";

// One answer to the conversation so far, streamed to stdout; returns its text.
std::string answer(Engine& engine, const server::ModelContext& model, const ChatOptions& o, const ChatHistory& history) {
  nlohmann::json body = o.request;
  body["messages"] = history.messages();
  if (!body.contains("temperature")) body["temperature"] = 0.0;  // greedy unless asked otherwise
  server::ParsedRequest parsed = server::parse_openai_request(server::Endpoint::kChatCompletions, body, model);
  RequestSpec spec = std::move(parsed.spec);
  spec.prompt = std::move(parsed.prompt);
  if (o.max_tokens)
    spec.stop.max_tokens = std::min(*o.max_tokens, server::room_for(static_cast<int64_t>(spec.prompt.size()), model));

  std::string text;
  FinishReason reason = FinishReason::kNone;
  spec.on_output = [&](const RequestOutput& d) {
    fmt::print("{}", d.text);
    std::fflush(stdout);
    text += d.text;
    if (d.finished) reason = d.finish_reason;
  };
  const int64_t max_tokens = spec.stop.max_tokens;
  engine.submit(std::move(spec));
  while (engine.step()) {
  }
  fmt::print("\n");
  std::fflush(stdout);
  if (reason == FinishReason::kLength)
    log::warning("the answer was cut at {} tokens (--max-tokens, or the room left in the context)", max_tokens);
  return text;
}

void run_chat(const ChatOptions& o, const GpuBackendFactory& gpu) {
  FG_CHECK(o.engine.shape.empty(), "chat needs a model with a tokenizer and a chat template; a --shape has neither");
  EngineSetupOptions engine = o.engine;
  // On the CPU each captured size costs a forward pass of its size at start-up (the capture's
  // warm-up): minutes for the default sizes up to 512 tokens, even with a 135M model. A
  // conversation decodes one token a step; longer prefills run eagerly, as fast on the CPU.
  if (engine.device == "cpu" && engine.cuda_graph_sizes.empty()) engine.cuda_graph_sizes = "1,2,4,8";
  std::unique_ptr<EngineSetup> setup = build_engine(engine, gpu, log::info_line);
  FG_CHECK(setup->tokenizer != nullptr, "{}: chat needs a tokenizer, and the model has none; give --tokenizer DIR",
           setup->source);
  FG_CHECK(!setup->chat.chat_template.empty(),
           "{}: chat needs a chat template, and the tokenizer has none; give one with --chat-template", setup->source);
  const ChatTemplate chat_template(setup->chat);
  const server::ModelContext model = model_context(*setup, &chat_template, setup->source);

  const bool terminal = ::isatty(STDIN_FILENO) != 0;
  fmt::print(stderr, "chat with {}: {}\n", setup->source, kCommands);
  ChatHistory history(o.system);
  std::string line;
  while (true) {
    if (terminal) {
      fmt::print("> ");
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) {
      if (terminal) fmt::print("\n");  // the shell's prompt starts on a line of its own
      return;
    }
    switch (classify_chat_line(line)) {
      case ChatLine::kEmpty:
        continue;
      case ChatLine::kExit:
        return;
      case ChatLine::kReset:
        history.reset();
        fmt::print("(conversation cleared{})\n", history.has_system() ? "; the system message stays" : "");
        continue;
      case ChatLine::kHelp:
        fmt::print("{}\n", kCommands);
        continue;
      case ChatLine::kUnknownCommand:
        fmt::print("unknown command {}: {}\n", trim_chat_line(line), kCommands);
        continue;
      case ChatLine::kMessage:
        break;
    }
    history.add_user(trim_chat_line(line));
    try {
      history.add_assistant(answer(*setup->engine, model, o, history));
    } catch (const std::exception& e) {
      history.drop_unanswered();
      log::error("{} (the message was not added; /reset starts a new conversation)", e.what());
    }
  }
}

}  // namespace

void add_chat_command(CLI::App& app, GpuBackendFactory gpu) {
  auto o = std::make_shared<ChatOptions>();
  CLI::App* cmd = app.add_subcommand(
      "chat", "Chat with a model in the terminal: each line you type is a message, the answer streams back; "
              "/reset clears the conversation, /exit or Ctrl-D ends it");
  cmd->add_option("--system", o->system, "The system message, kept across /reset");
  cmd->add_option_function<int64_t>(
         "--max-tokens", [o](int64_t n) { o->max_tokens = n; },
         "Most tokens in one answer (default: as many as the context has room for, or generation_config.json's "
         "max_new_tokens)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option_function<double>(
      "--temperature", [o](double v) { o->request["temperature"] = v; },
      "Sample at this temperature (default: greedy, whatever generation_config.json says)");
  cmd->add_option_function<double>(
      "--top-p", [o](double v) { o->request["top_p"] = v; }, "Nucleus sampling (default: generation_config.json's)");
  cmd->add_option_function<int64_t>(
      "--top-k", [o](int64_t v) { o->request["top_k"] = v; }, "Top-k sampling (default: generation_config.json's)");
  cmd->add_option_function<double>(
      "--min-p", [o](double v) { o->request["min_p"] = v; }, "Min-p sampling (default: generation_config.json's)");
  cmd->add_option_function<double>(
      "--repetition-penalty", [o](double v) { o->request["repetition_penalty"] = v; },
      "Repetition penalty (default: generation_config.json's)");
  cmd->add_flag_function(
      "--ignore-eos", [o](int64_t) { o->request["ignore_eos"] = true; },
      "Answer past the model's EOS ids, up to --max-tokens");
  // One conversation at a time: a KV pool for one sequence unless --max-num-seqs asks for more.
  o->engine.max_num_seqs = 1;
  add_engine_options(*cmd, o->engine);
  cmd->callback([o, gpu] {
    apply_default_model(o->engine);
    run_chat(*o, gpu);
  });
}

}  // namespace fg::cli
