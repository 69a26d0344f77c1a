// tests/test_cli_vllm.cpp — the command line as a vLLM user writes it: `serve MODEL`, models
// named ORG/NAME found in the Hugging Face cache (--revision), missing model folders named as
// such, --tokenizer, --chat-template (file or inline), --dtype, --generation-config,
// --max-logprobs, --log-level before or after the command, --version and the commands' help.
// Most cases run the built executable; option logic without a visible effect on the CPU (the
// CUDA --dtype refusal, generation_config.json's eos ids, the stats line) is called directly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "cli/dtype_option.h"
#include "cli/engine_setup.h"
#include "cli/model_source.h"
#include "cli/stats_logger.h"
#include "cli_run.h"
#include "model/model_path.h"
#include "test_support.h"

namespace fg {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using test::CliRun;
using test::first_line;
using test::run_fullgraph;

// A fresh folder under the temp dir, removed with the object.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// `dir` gets symlinks to `files` of `from`.
void link_files(const fs::path& from, const fs::path& dir, std::initializer_list<const char*> files) {
  fs::create_directories(dir);
  for (const char* f : files) fs::create_symlink(fs::absolute(from / f), dir / f);
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// The e2e model (weights, no tokenizer) whose greedy text the goldens hold, and its golden lines.
struct E2eModel {
  TempDir dir{"fg_vllm_e2e"};
  nlohmann::json prompt_line, chat_line;
  E2eModel() {
    const fs::path data = test::testdata_dir();
    link_files(data / "e2e/tiny-qwen3tok", dir.path, {"config.json", "model.safetensors"});
    std::ifstream golden(data / "e2e/tiny-qwen3tok/e2e_golden.jsonl");
    std::string first, second;
    std::getline(golden, first);
    std::getline(golden, second);
    prompt_line = nlohmann::json::parse(first);
    chat_line = nlohmann::json::parse(second);
  }
  std::string tokenizer() const { return test::tokenizer_dir("qwen3"); }
};

TEST(CliVllm, ServeTakesTheModelAsAPositionalArgument) {
  // The positional model is taken: the failure is the folder's, reported after the listen.
  CliRun missing = run_fullgraph("serve /nonexistent/fg-model --port 0");
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_THAT(missing.output, HasSubstr("the model folder /nonexistent/fg-model does not exist"));

  CliRun both = run_fullgraph("serve /models/a --model /models/b --port 0");
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_THAT(both.output, HasSubstr("the argument '/models/a' and as --model '/models/b'"));

  // generate keeps --model: a positional model is not an argument it takes.
  CliRun positional_generate = run_fullgraph("generate /models/a --prompt-ids 1");
  EXPECT_NE(positional_generate.exit_code, 0);
  EXPECT_NE(positional_generate.exit_code, 1);  // a command-line error, not a run that failed
}

// A Hugging Face cache holding org/tiny at two commits: main -> kCommitA (tiny-llama3-rope),
// tag v2 -> kCommitB (tiny-llama), as huggingface_hub lays it out.
constexpr const char* kCommitA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1";
constexpr const char* kCommitB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb2";

void make_hf_cache(const fs::path& hub) {
  const fs::path repo = hub / "models--org--tiny";
  fs::create_directories(repo / "refs");
  write_file(repo / "refs/main", kCommitA);
  write_file(repo / "refs/v2", std::string(kCommitB) + "\n");
  link_files(test::model_fixture("tiny-llama3-rope"), repo / "snapshots" / kCommitA, {"config.json", "model.safetensors"});
  link_files(test::model_fixture("tiny-llama"), repo / "snapshots" / kCommitB, {"config.json", "model.safetensors"});
}

TEST(CliVllm, ModelNamesResolveOfflineFromTheHuggingFaceCache) {
  TempDir cache("fg_vllm_hf");
  const fs::path hub = cache.path / "hub";
  make_hf_cache(hub);
  const std::string run = "generate --model org/tiny --prompt-ids 1,2,3 --max-tokens 2";
  const std::string env = "-u HF_HOME -u XDG_CACHE_HOME HF_HUB_CACHE=" + hub.string();

  CliRun main = run_fullgraph(run, env);
  ASSERT_EQ(main.exit_code, 0) << main.output;
  EXPECT_THAT(main.output, HasSubstr((hub / "models--org--tiny/snapshots" / kCommitA).string()));
  CliRun tag = run_fullgraph(run + " --revision v2", env);
  ASSERT_EQ(tag.exit_code, 0) << tag.output;
  EXPECT_THAT(tag.output, HasSubstr(std::string("snapshots/") + kCommitB));
  CliRun commit = run_fullgraph(run + " --revision " + kCommitB, env);
  ASSERT_EQ(commit.exit_code, 0) << commit.output;
  EXPECT_THAT(commit.output, HasSubstr(std::string("snapshots/") + kCommitB));

  // $HF_HOME/hub, then ~/.cache/huggingface/hub, when $HF_HUB_CACHE is not set.
  CliRun home = run_fullgraph(run, "-u HF_HUB_CACHE -u XDG_CACHE_HOME HF_HOME=" + cache.path.string());
  EXPECT_EQ(home.exit_code, 0) << home.output;
  TempDir user("fg_vllm_home");
  fs::create_directories(user.path / ".cache/huggingface");
  fs::create_directory_symlink(hub, user.path / ".cache/huggingface/hub");
  CliRun dot_cache = run_fullgraph(run, "-u HF_HUB_CACHE -u HF_HOME -u XDG_CACHE_HOME HOME=" + user.path.string());
  EXPECT_EQ(dot_cache.exit_code, 0) << dot_cache.output;

  // Not cached: every path looked at is named.
  CliRun missing = run_fullgraph("generate --model org/absent --prompt-ids 1", env);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr("not in the Hugging Face cache: looked for " +
                                        (hub / "models--org--absent/refs/main").string() + " and " +
                                        (hub / "models--org--absent/snapshots/main").string()));
  CliRun no_revision = run_fullgraph(run + " --revision nosuch", env);
  EXPECT_EQ(no_revision.exit_code, 1);
  EXPECT_THAT(no_revision.output, HasSubstr((hub / "models--org--tiny/refs/nosuch").string()));

  // The model layer's function, as every command calls it.
  EXPECT_THAT(test::error_of([&] { resolve_model_path("org/tiny", "../../etc"); }),
              HasSubstr("not a branch, tag or commit"));
  EXPECT_TRUE(looks_like_repo_id("meta-llama/Llama-3.2-1B"));
  EXPECT_TRUE(looks_like_repo_id("gpt2"));
  EXPECT_FALSE(looks_like_repo_id("/abs/path"));
  EXPECT_FALSE(looks_like_repo_id("a/b/c"));
  EXPECT_FALSE(looks_like_repo_id("../up"));
}

TEST(CliVllm, AMissingModelFolderIsNamedAsSuch) {
  CliRun text = run_fullgraph("generate --model /nonexistent --prompt hi");
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_THAT(text.output, HasSubstr("the model folder /nonexistent does not exist"));
  EXPECT_THAT(text.output, Not(HasSubstr("tokenizer.json")));

  TempDir tokenizer_only("fg_vllm_noconfig");
  fs::copy_file(test::tokenizer_dir("qwen3") + "/tokenizer.json", tokenizer_only.path / "tokenizer.json");
  CliRun no_config = run_fullgraph("generate --model " + tokenizer_only.path.string() + " --prompt hi");
  EXPECT_EQ(no_config.exit_code, 1);
  EXPECT_THAT(no_config.output, HasSubstr("the model folder " + tokenizer_only.path.string() + " has no config.json"));
  CliRun serve = run_fullgraph("serve --model " + tokenizer_only.path.string() + " --port 0");
  EXPECT_EQ(serve.exit_code, 1);
  EXPECT_THAT(serve.output, HasSubstr("has no config.json"));
}

TEST(CliVllm, TokenizerAndChatTemplateOptionsReplaceTheModels) {
  const E2eModel m;
  const std::string model = "generate --model " + m.dir.path.string() + " --max-tokens 12 --rope-inv-freq-bf16";
  const std::string want = m.prompt_line["output_text"].get<std::string>();

  CliRun no_tokenizer = run_fullgraph(model + " --prompt Hello");
  EXPECT_EQ(no_tokenizer.exit_code, 1);
  EXPECT_THAT(no_tokenizer.output, HasSubstr("give --tokenizer DIR"));
  CliRun text = run_fullgraph(model + " --tokenizer " + m.tokenizer() + " --prompt Hello");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_EQ(first_line(text.output), want);

  // The golden chat through the tokenizer folder's own template.
  const auto& msgs = m.chat_line["chat"];
  CliRun chat = run_fullgraph(model + " --tokenizer " + m.tokenizer() + " --chat --system '" +
                              msgs[0]["content"].get<std::string>() + "' --user '" +
                              msgs[1]["content"].get<std::string>() + "'");
  ASSERT_EQ(chat.exit_code, 0) << chat.output;
  EXPECT_EQ(first_line(chat.output), m.chat_line["output_text"].get<std::string>());

  // A template that renders "Hello" whatever the chat: inline, and from a file, as vLLM takes it.
  const std::string chat_args = model + " --tokenizer " + m.tokenizer() + " --chat --user ignored --chat-template ";
  CliRun inline_template = run_fullgraph(chat_args + "'{{ \"Hello\" }}'");
  ASSERT_EQ(inline_template.exit_code, 0) << inline_template.output;
  EXPECT_EQ(first_line(inline_template.output), want);
  TempDir files("fg_vllm_template");
  write_file(files.path / "hello.jinja", "{{ 'Hel' + 'lo' }}");
  CliRun file_template = run_fullgraph(chat_args + (files.path / "hello.jinja").string());
  ASSERT_EQ(file_template.exit_code, 0) << file_template.output;
  EXPECT_EQ(first_line(file_template.output), want);
  CliRun bad_file = run_fullgraph(chat_args + "/no/such/template.jinja");
  EXPECT_EQ(bad_file.exit_code, 1);
  EXPECT_THAT(bad_file.output, HasSubstr("--chat-template /no/such/template.jinja: looks like a file name"));
}

TEST(CliVllm, DtypeIsWhatTheBackendCanHonour) {
  CliRun bf16 = run_fullgraph("generate --prompt-ids 1,2 --max-tokens 2 --dtype bfloat16");
  EXPECT_EQ(bf16.exit_code, 0) << bf16.output;
  EXPECT_THAT(bf16.output, HasSubstr("the CPU backend computes in float32"));
  CliRun f32 = run_fullgraph("generate --prompt-ids 1,2 --max-tokens 2 --dtype float32");
  EXPECT_EQ(f32.exit_code, 0) << f32.output;
  EXPECT_THAT(f32.output, Not(HasSubstr("warning")));
  EXPECT_EQ(first_line(f32.output), first_line(bf16.output));
  CliRun bad = run_fullgraph("generate --prompt-ids 1,2 --dtype int8");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.output, HasSubstr("unknown --dtype 'int8'"));

  // The CUDA backend computes in bf16 only (a CPU build has no GPU to show it end to end).
  EXPECT_EQ(cli::check_dtype_option("auto", Device::kCuda), "");
  EXPECT_EQ(cli::check_dtype_option("bfloat16", Device::kCuda), "");
  EXPECT_THAT(test::error_of([] { cli::check_dtype_option("float16", Device::kCuda); }),
              HasSubstr("the CUDA backend computes in bfloat16 only"));
  EXPECT_THAT(test::error_of([] { cli::check_dtype_option("float", Device::kCuda); }), HasSubstr("--dtype float:"));
  EXPECT_THAT(cli::check_dtype_option("half", Device::kHost), HasSubstr("not float16's"));
  EXPECT_EQ(cli::check_dtype_option("float32", Device::kHost), "");
}

TEST(CliVllm, GenerationConfigChoosesWhereTheExtraEosIdsAndSamplingDefaultsComeFrom) {
  TempDir model("fg_vllm_genconfig");
  link_files(test::model_fixture("tiny-llama3-rope"), model.path, {"config.json", "model.safetensors"});
  write_file(model.path / "generation_config.json", R"({"eos_token_id": [2, 77], "temperature": 0.6})");
  TempDir other("fg_vllm_genconfig_other");
  write_file(other.path / "generation_config.json", R"({"eos_token_id": 88})");
  const auto setup = [&](const std::string& mode) {
    cli::EngineSetupOptions o;
    o.model_dir = model.path.string();
    o.generation_config = mode;
    o.kv_cache_blocks = 8;
    o.enforce_eager = true;  // no graphs to capture: only what was read is looked at
    o.progress = false;
    return cli::build_engine(o, {}, [](const std::string&) {});
  };
  const auto eos = [&](const std::string& mode) { return setup(mode)->eos_token_ids; };
  EXPECT_EQ(setup("auto")->generation.sampling.temperature, 0.6f);
  EXPECT_FALSE(setup("vllm")->generation.sampling.temperature.has_value());
  using ::testing::Contains;
  EXPECT_THAT(eos("auto"), Contains(77));
  EXPECT_THAT(eos("vllm"), Contains(77));  // vLLM reads the eos ids under both; vllm drops the sampling defaults
  EXPECT_THAT(eos(other.path.string()), Contains(88));
  EXPECT_THAT(eos(other.path.string()), Not(Contains(77)));
  EXPECT_THAT(test::error_of([&] { eos("/no/such/folder"); }), HasSubstr("expected auto, vllm or a folder"));
  CliRun cli = run_fullgraph("generate --prompt-ids 1 --generation-config /no/such/folder");
  EXPECT_EQ(cli.exit_code, 1);
  EXPECT_THAT(cli.output, HasSubstr("--generation-config /no/such/folder"));
}

TEST(CliVllm, ServeRefusesMoreLogprobsThanTheEngineReturns) {
  CliRun too_many = run_fullgraph("serve --max-logprobs 21 --port 0");
  EXPECT_EQ(too_many.exit_code, 1);
  EXPECT_THAT(too_many.output, HasSubstr("--max-logprobs 21: the engine returns at most 20 logprobs per token"));
}

TEST(CliVllm, LogLevelIsAGlobalOptionBeforeOrAfterTheCommand) {
  const std::string run = "generate --prompt-ids 1,2 --max-tokens 2";
  CliRun info = run_fullgraph(run);
  ASSERT_EQ(info.exit_code, 0) << info.output;
  EXPECT_THAT(info.output, HasSubstr("built-in default"));
  for (const std::string& args : {"--log-level error " + run, run + " --log-level warning",
                                  "--uvicorn-log-level critical " + run}) {
    CliRun quiet = run_fullgraph(args);
    ASSERT_EQ(quiet.exit_code, 0) << args << "\n" << quiet.output;
    EXPECT_EQ(quiet.output, first_line(info.output) + "\n") << args;
  }
  CliRun debug = run_fullgraph(run + " --log-level debug");
  EXPECT_EQ(debug.exit_code, 0);
  EXPECT_THAT(debug.output, HasSubstr("built-in default"));
  CliRun bad = run_fullgraph("--log-level loud " + run);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.output, HasSubstr("--log-level"));
}

TEST(CliVllm, VersionAndHelpSayWhatIsBuiltAndWhatEachCommandDoes) {
  CliRun version = run_fullgraph("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_THAT(version.output, ::testing::MatchesRegex("fullgraph [0-9]+\\.[0-9]+\\.[0-9]+ \\([A-Za-z]+ build, "
                                                      "(CUDA backend built for sm_90a|no CUDA backend: CPU only)\\)\n"));
  CliRun help = run_fullgraph("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.output, HasSubstr("--log-level"));
  EXPECT_THAT(help.output, HasSubstr("--version"));
  EXPECT_THAT(help.output, Not(HasSubstr("greedily from a prompt of token ids")));
  EXPECT_THAT(help.output, HasSubstr("one prompt (text, a chat or token ids)"));
  for (const char* command : {"generate", "serve", "bench", "render-chat", "tokenize", "info"}) {
    CliRun sub = run_fullgraph(std::string(command) + " --help");
    EXPECT_EQ(sub.exit_code, 0) << command;
    EXPECT_THAT(sub.output, HasSubstr("Every command also takes --log-level")) << command;
  }
  CliRun serve = run_fullgraph("serve --help");
  for (const char* flag : {"--chat-template", "--generation-config", "--dtype", "--tokenizer", "--revision",
                           "--max-logprobs", "--disable-log-stats", "--return-tokens-as-token-ids"})
    EXPECT_THAT(serve.output, HasSubstr(flag)) << flag;
  EXPECT_THAT(serve.output, HasSubstr("vllm serve MODEL"));
}

TEST(CliVllm, TheStatsLineReadsAsVllms) {
  cli::EngineSnapshot before, now;
  now.stats.prompt_tokens = 200;
  now.stats.generated_tokens = 50;
  now.stats.steps = 10;
  now.stats.graph_steps = 9;
  now.gauges.running = 3;
  now.gauges.waiting = 1;
  now.gauges.usage = 0.125;
  now.gauges.prefix_query_tokens = 200;
  now.gauges.prefix_hit_tokens = 50;
  EXPECT_EQ(cli::engine_stats_line(before, now, 10.0),
            "Avg prompt throughput: 20.0 tokens/s, Avg generation throughput: 5.0 tokens/s, Running: 3 reqs, "
            "Waiting: 1 reqs, KV cache usage: 12.5%, Prefix cache hit rate: 25.0%, Graph replays: 90.0% of 10 steps");
  EXPECT_TRUE(cli::engine_busy(before, now));
  cli::EngineSnapshot idle = now;
  idle.gauges.running = idle.gauges.waiting = 0;
  EXPECT_FALSE(cli::engine_busy(idle, idle));
}

}  // namespace
}  // namespace fg
