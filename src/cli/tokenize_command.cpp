// cli/tokenize_command.cpp — `fullgraph tokenize`:
//   encode (default): each stdin line is a JSON string; each output line is a JSON array of ids;
//   --decode:         each stdin line is a JSON array of ids; each output line is a JSON string;
//   --bench FILE:     encodes FILE line by line in-process and reports throughput (hidden; used by
//                     bench/bench_tokenizer.py).
// Input errors name the line; output is buffered and written in large chunks.
#include "cli/tokenize_command.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "model/model_path.h"
#include "tokenizer/tokenizer.h"

namespace fg::cli {

namespace {

struct TokenizeOptions {
  std::string model_dir;
  std::string tokenizer_file;
  bool with_special = false;
  bool decode = false;
  bool skip_special = false;
  std::string bench_file;
  int bench_repeat = 1;
};

// Collects output and writes it to stdout in chunks of about 1 MiB.
class Output {
 public:
  ~Output() { flush(); }
  std::string& buffer() { return buffer_; }
  void maybe_flush() {
    if (buffer_.size() >= (1u << 20)) flush();
  }
  void flush() {
    if (!buffer_.empty() && std::fwrite(buffer_.data(), 1, buffer_.size(), stdout) != buffer_.size())
      fail("tokenize: cannot write to stdout");
    buffer_.clear();
    std::fflush(stdout);
  }

 private:
  std::string buffer_;
};

nlohmann::json parse_line(const std::string& line, size_t number) {
  try {
    return nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    fail("tokenize: stdin line {} is not valid JSON: {}", number, e.what());
  }
}

void run_encode(const Tokenizer& tok, bool with_special) {
  Output out;
  std::string line;
  for (size_t number = 1; std::getline(std::cin, line); ++number) {
    const nlohmann::json value = parse_line(line, number);
    FG_CHECK(value.is_string(), "tokenize: stdin line {} is not a JSON string", number);
    const std::vector<int32_t> ids = tok.encode(value.get_ref<const std::string&>(), with_special);
    std::string& b = out.buffer();
    b.push_back('[');
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i > 0) b.push_back(',');
      fmt::format_to(std::back_inserter(b), "{}", ids[i]);
    }
    b += "]\n";
    out.maybe_flush();
  }
}

void run_decode(const Tokenizer& tok, bool skip_special) {
  Output out;
  std::string line;
  std::vector<int32_t> ids;
  for (size_t number = 1; std::getline(std::cin, line); ++number) {
    const nlohmann::json value = parse_line(line, number);
    FG_CHECK(value.is_array(), "tokenize --decode: stdin line {} is not a JSON array of ids", number);
    ids.clear();
    for (size_t i = 0; i < value.size(); ++i) {
      const nlohmann::json& id = value[i];
      FG_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() <= INT32_MAX,
               "tokenize --decode: stdin line {}: item {} is not a token id", number, i);
      ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
    out.buffer() += nlohmann::json(tok.decode(ids, skip_special)).dump();
    out.buffer() += '\n';
    out.maybe_flush();
  }
}

void run_bench(const Tokenizer& tok, const std::string& path, int repeat, bool with_special) {
  std::ifstream in(path, std::ios::binary);
  FG_CHECK(in, "tokenize --bench: cannot open {}", path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  // Documents are lines (newline included), the same split bench_tokenizer.py gives Python.
  std::vector<std::string_view> docs;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    end = end == std::string::npos ? text.size() : end + 1;
    docs.emplace_back(text.data() + start, end - start);
    start = end;
  }
  for (int pass = 1; pass <= repeat; ++pass) {
    size_t tokens = 0;
    const auto start = std::chrono::steady_clock::now();
    for (std::string_view doc : docs) tokens += tok.encode(doc, with_special).size();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("bench pass {}: {} bytes, {} lines, {} tokens in {:.3f} s: {:.2f} MB/s\n", pass, text.size(),
               docs.size(), tokens, seconds, static_cast<double>(text.size()) / 1e6 / seconds);
  }
}

void run_tokenize(const TokenizeOptions& o) {
  FG_CHECK(o.model_dir.empty() != o.tokenizer_file.empty(), "tokenize: give exactly one of --model DIR or --tokenizer FILE");
  FG_CHECK(!o.skip_special || o.decode, "tokenize: --skip-special applies to --decode only");
  FG_CHECK(!(o.with_special && o.decode), "tokenize: --with-special applies to encoding, not to --decode");
  const std::string path =
      o.tokenizer_file.empty() ? resolve_model_path(o.model_dir, "", "model") + "/tokenizer.json" : o.tokenizer_file;
  const Tokenizer tok = Tokenizer::from_file(path);
  std::ios::sync_with_stdio(false);
  if (!o.bench_file.empty()) run_bench(tok, o.bench_file, o.bench_repeat, o.with_special);
  else if (o.decode) run_decode(tok, o.skip_special);
  else run_encode(tok, o.with_special);
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto options = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "Encode JSON strings (one per stdin line) to JSON id arrays, or decode with --decode");
  cmd->add_option("--model", options->model_dir, "Checkpoint folder holding tokenizer.json, or ORG/NAME in the Hugging Face cache");
  cmd->add_option("--tokenizer", options->tokenizer_file, "A tokenizer.json file (instead of --model)");
  cmd->add_flag("--with-special", options->with_special, "Add the post-processor's special tokens (BOS...)");
  cmd->add_flag("--decode", options->decode, "Read JSON arrays of ids and write the decoded JSON strings");
  cmd->add_flag("--skip-special", options->skip_special, "With --decode: drop special tokens");
  cmd->add_option("--bench", options->bench_file, "Time encoding this text file, line by line")->group("");
  cmd->add_option("--bench-repeat", options->bench_repeat, "Passes over the --bench file")->group("")
      ->check(CLI::Range(1, 1000));
  cmd->callback([options] { run_tokenize(*options); });
}

}  // namespace fg::cli
