// tests/cli_run.h — runs the built `fullgraph` executable (or a copy of it) with arguments (and,
// optionally, an environment prefix such as "HF_HUB_CACHE=/tmp/x"), and returns its exit code and
// output.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace fg::test {

struct CliRun {
  int exit_code;
  std::string output;  // stdout, then stderr
};

// Runs `binary` with `args`; `env` is handed to env(1) before it ("NAME=value ...", "-u NAME"),
// or left empty.
inline CliRun run_program(const std::string& binary, const std::string& args, const std::string& env = "") {
  const std::string err_file =
      (std::filesystem::temp_directory_path() / ("fg_cli_err_" + std::to_string(::getpid()))).string();
  const std::string command =
      (env.empty() ? "" : "env " + env + " ") + binary + " " + args + " 2>" + err_file;
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  const int status = pclose(pipe);
  std::ifstream err(err_file);
  output += std::string(std::istreambuf_iterator<char>(err), {});
  std::filesystem::remove(err_file);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// The built `fullgraph`; `env` as run_program's.
inline CliRun run_fullgraph(const std::string& args, const std::string& env = "") {
  return run_program(FULLGRAPH_BINARY, args, env);
}

inline std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace fg::test
