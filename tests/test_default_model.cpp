// tests/test_default_model.cpp — which model `generate`, `serve` and `chat` run without --model
// (cli/default_model.h): FULLGRAPH_DEFAULT_MODEL (a model, or `builtin`), else the trained model in
// models/ beside the executable's build folder, else the built-in tiny model; one log line says
// which. The choice is checked on its own, then through the executable, whose copy in a temporary
// build/ folder, with the variable unset, looks for its own ../models.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "cli/default_model.h"
#include "cli_run.h"

namespace fg {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// A temporary repository layout: ROOT/build/ for the executable, ROOT/models/ for the model.
class DefaultModelLayout : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("fg_default_model_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "build");
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path executable() const { return root_ / "build" / "fullgraph"; }
  fs::path model_file() const { return root_ / "models" / cli::kDefaultModelFile; }
  void put_model_file() {
    fs::create_directories(root_ / "models");
    std::ofstream(model_file()) << "not a real model";
  }

  fs::path root_;
};

TEST_F(DefaultModelLayout, BuiltinWordForcesTheBuiltInModel) {
  put_model_file();
  const cli::DefaultModel chosen = cli::choose_default_model("builtin", executable());
  EXPECT_EQ(chosen.model, "");
  EXPECT_THAT(chosen.log_line, HasSubstr("no --model: using the built-in tiny model"));
  EXPECT_THAT(chosen.log_line, HasSubstr("FULLGRAPH_DEFAULT_MODEL=builtin"));
}

TEST_F(DefaultModelLayout, VariableNamesTheModel) {
  put_model_file();
  const cli::DefaultModel chosen = cli::choose_default_model("/models/llama", executable());
  EXPECT_EQ(chosen.model, "/models/llama");
  EXPECT_EQ(chosen.log_line, "no --model: using the default model /models/llama (FULLGRAPH_DEFAULT_MODEL)");
}

TEST_F(DefaultModelLayout, ModelsFolderBesideTheBuildFolder) {
  put_model_file();
  for (const char* unset : {static_cast<const char*>(nullptr), ""}) {
    const cli::DefaultModel chosen = cli::choose_default_model(unset, executable());
    EXPECT_EQ(chosen.model, model_file().string());
    EXPECT_EQ(chosen.log_line, "no --model: using the default model " + model_file().string());
  }
  // A link to the file counts as the file (a shared models folder, say).
  const fs::path elsewhere = root_ / "elsewhere.gguf";
  fs::rename(model_file(), elsewhere);
  fs::create_symlink(elsewhere, model_file());
  EXPECT_EQ(cli::choose_default_model(nullptr, executable()).model, model_file().string());
}

TEST_F(DefaultModelLayout, NoModelFileMeansTheBuiltInModel) {
  const cli::DefaultModel chosen = cli::choose_default_model(nullptr, executable());
  EXPECT_EQ(chosen.model, "");
  EXPECT_THAT(chosen.log_line, HasSubstr("no --model: using the built-in tiny model (random weights"));
  EXPECT_THAT(chosen.log_line, HasSubstr(model_file().string() + " is not there"));
  EXPECT_THAT(chosen.log_line, HasSubstr("scripts/setup.sh"));
  // A folder of that name is not a model file.
  fs::create_directories(model_file());
  EXPECT_EQ(cli::choose_default_model(nullptr, executable()).model, "");
  EXPECT_EQ(cli::choose_default_model(nullptr, "").model, "");
}

// Through the executable: FULLGRAPH_DEFAULT_MODEL=builtin, a path in the variable, and a copy of the executable that finds (or not) ../models/ with the variable unset.
TEST_F(DefaultModelLayout, TheExecutableSaysWhichModelItRuns) {
  const test::CliRun builtin =
      test::run_fullgraph("generate --prompt-ids 1,2 --max-tokens 2", "FULLGRAPH_DEFAULT_MODEL=builtin");
  ASSERT_EQ(builtin.exit_code, 0) << builtin.output;
  EXPECT_THAT(builtin.output, HasSubstr("no --model: using the built-in tiny model (random weights; "
                                        "FULLGRAPH_DEFAULT_MODEL=builtin)"));

  const test::CliRun given = test::run_fullgraph("generate --prompt-ids 1,2 --max-tokens 2",
                                                 "FULLGRAPH_DEFAULT_MODEL=" + (root_ / "no-such-model").string());
  EXPECT_EQ(given.exit_code, 1) << given.output;
  EXPECT_THAT(given.output, HasSubstr("no --model: using the default model " + (root_ / "no-such-model").string() +
                                      " (FULLGRAPH_DEFAULT_MODEL)"));

  std::error_code ec;
  fs::create_hard_link(FULLGRAPH_BINARY, executable(), ec);
  if (ec) fs::copy_file(FULLGRAPH_BINARY, executable());
  const test::CliRun absent =
      test::run_program(executable().string(), "generate --prompt-ids 1,2 --max-tokens 2", "-u FULLGRAPH_DEFAULT_MODEL");
  ASSERT_EQ(absent.exit_code, 0) << absent.output;
  EXPECT_THAT(absent.output, HasSubstr("no --model: using the built-in tiny model (random weights; " +
                                       model_file().string() + " is not there"));

  put_model_file();  // not a GGUF file: the choice is logged, then the load fails naming it
  const test::CliRun present =
      test::run_program(executable().string(), "generate --prompt-ids 1,2 --max-tokens 2", "-u FULLGRAPH_DEFAULT_MODEL");
  EXPECT_EQ(present.exit_code, 1) << present.output;
  EXPECT_THAT(present.output, HasSubstr("no --model: using the default model " + model_file().string()));

  // --model given: no default is looked for.
  const test::CliRun explicit_model = test::run_program(
      executable().string(), "generate --model " + model_file().string() + " --prompt-ids 1", "-u FULLGRAPH_DEFAULT_MODEL");
  EXPECT_THAT(explicit_model.output, Not(HasSubstr("no --model")));
}

// serve names the model it serves after the default model, as if it had been given as --model.
TEST_F(DefaultModelLayout, ServeNamesTheDefaultModel) {
  const std::string missing = (root_ / "no-such-model").string();
  // The name is logged when the port is bound, before the model loads (and here fails to).
  const test::CliRun r = test::run_fullgraph("serve --port 0", "FULLGRAPH_DEFAULT_MODEL=" + missing);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("as '" + missing + "'"));
}

}  // namespace
}  // namespace fg
