// tests/test_step_masks.cpp — StepMaskFiller (engine/step_masks.h): each request's matcher first
// takes the token its last step sampled, then fills the mask of the next one, whether the step's
// requests are filled on the calling thread or on the pool; a pending token the matcher refuses
// leaves a row that allows only the EOS ids.
#include <gtest/gtest.h>

#include <vector>

#include "engine/step_masks.h"
#include "grammar_test_support.h"

namespace fg {
namespace {

using test::compiler_fixture;
using test::constraint;

// "yes" or "no": the tokens of the fixture's encoding of each.
std::vector<int32_t> ids_of(const std::string& text) {
  return test::tokenizer_fixture("llama3_1").encode(text, /*add_special_tokens=*/false);
}

TEST(StepMaskFiller, TakesThePendingTokenThenFillsLikeAMatcherThatTookItItself) {
  const auto compiled =
      compiler_fixture("llama3_1").compile(constraint(StructuredOutputKind::kRegex, "(yes|no) and (yes|no)"));
  for (int threads : {1, 3}) {
    StepMaskFiller filler(threads);
    constexpr int kRequests = 5;
    std::vector<GrammarMatcher> matchers, references;
    std::vector<std::vector<int32_t>> rows(kRequests);
    std::vector<int32_t> pending(kRequests, -1);
    for (int i = 0; i < kRequests; ++i) {
      matchers.emplace_back(compiled);
      references.emplace_back(compiled);
    }
    // Requests 1 and 3 have a sampled token to take; the others none yet.
    const std::vector<int32_t> yes = ids_of("yes"), no = ids_of("no");
    ASSERT_EQ(yes.size(), 1u);
    ASSERT_EQ(no.size(), 1u);
    pending[1] = yes[0];
    pending[3] = no[0];
    ASSERT_TRUE(references[1].accept_token(yes[0]));
    ASSERT_TRUE(references[3].accept_token(no[0]));
    std::vector<MaskFill> fills;
    for (int i = 0; i < kRequests; ++i) fills.push_back({&matchers[i], &pending[i], &rows[i]});
    filler.fill(fills);
    for (int i = 0; i < kRequests; ++i) {
      EXPECT_EQ(pending[i], -1) << "threads " << threads << " request " << i;
      EXPECT_EQ(rows[i], test::mask_of(references[i])) << "threads " << threads << " request " << i;
    }
  }
}

TEST(StepMaskFiller, APendingTokenTheMatcherRefusesLeavesOnlyTheEosIds) {
  const auto compiled = compiler_fixture("llama3_1").compile(constraint(StructuredOutputKind::kRegex, "yes"));
  StepMaskFiller filler(1);
  GrammarMatcher matcher(compiled);
  std::vector<int32_t> row;
  int32_t pending = ids_of("no")[0];
  const std::vector<MaskFill> fills = {{&matcher, &pending, &row}};
  filler.fill(fills);
  EXPECT_EQ(pending, -1);
  const std::vector<int32_t> eos = test::fixture_eos_ids("llama3_1");
  ASSERT_FALSE(eos.empty());
  for (int64_t id = 0; id < matcher.vocab_size(); ++id) {
    const bool is_eos = std::find(eos.begin(), eos.end(), id) != eos.end();
    ASSERT_EQ(test::allowed(row, id), is_eos) << "token " << id;
    EXPECT_EQ(matcher.is_stop_token(static_cast<int32_t>(id)), is_eos) << "token " << id;
  }
}

}  // namespace
}  // namespace fg
