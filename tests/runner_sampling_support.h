// tests/runner_sampling_support.h — what the CPU and the CUDA runner sampling tests share: bit
// comparison of logprob results, a random mix of sampling settings, and RunnerSamplingTest, the
// fixture base with the graph-against-eager step loop, the raw-logits step and the token-mask
// checks of those tests.
#pragma once

#include <gtest/gtest.h>

#include <gmock/gmock.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runner/model_runner.h"
#include "runner_test_support.h"
#include "test_support.h"
#include "sampling/cpu_logprobs.h"
#include "sampling/sampling_math.h"
#include "token_mask_support.h"

namespace fg::test {

inline bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

// Bit-identical logprob entries, NaN included.
inline void expect_same_logprobs(const std::vector<TokenLogprobs>& a, const std::vector<TokenLogprobs>& b,
                                 const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t r = 0; r < a.size(); ++r) {
    EXPECT_TRUE(same_bits(a[r].logprob, b[r].logprob)) << what << " request " << r << ": " << a[r].logprob << " vs "
                                                       << b[r].logprob;
    ASSERT_EQ(a[r].top.size(), b[r].top.size()) << what << " request " << r;
    for (size_t k = 0; k < a[r].top.size(); ++k) {
      EXPECT_EQ(a[r].top[k].first, b[r].top[k].first) << what << " request " << r << " rank " << k;
      EXPECT_TRUE(same_bits(a[r].top[k].second, b[r].top[k].second)) << what << " request " << r << " rank " << k;
    }
  }
}

// A mix of sampling settings: greedy and sampled, with and without penalties and logprobs.
inline SamplingParams mixed_params(std::mt19937& rng) {
  std::uniform_int_distribution<int> pick(0, 99);
  SamplingParams p;
  if (pick(rng) < 60) {
    p.temperature = 0.5f + static_cast<float>(pick(rng)) / 100.0f;
    p.top_k = pick(rng) < 50 ? 0 : 20;
    p.top_p = pick(rng) < 50 ? 1.0f : 0.9f;
  }
  p.seed = static_cast<int64_t>(rng());
  p.step = rng() % 100;
  const int k = pick(rng);
  if (k < 30) p.repetition_penalty = 1.0f + static_cast<float>(pick(rng)) / 50.0f;
  if (k >= 20 && k < 50) p.presence_penalty = static_cast<float>(pick(rng)) / 25.0f - 2.0f;
  if (k >= 40 && k < 70) p.frequency_penalty = static_cast<float>(pick(rng)) / 25.0f - 2.0f;
  const int32_t counts[] = {-1, -1, 0, 1, 5, kMaxLogprobs};
  p.num_logprobs = counts[pick(rng) % 6];
  return p;
}

// Request r's logprobs in `result` are those of its raw logits (sampling_params.h, item 4): the
// sampled token's value and the top list, recomputed by the CPU reference row functions bit for
// bit (the logprob arithmetic is exact past the logits); none when it asked for none.
inline void expect_logprobs_of_raw_logits(const StepResult& result, const std::vector<float>& raw, int64_t V,
                                          int64_t r, int32_t num_logprobs) {
  const TokenLogprobs& got = result.logprobs[r];
  if (num_logprobs < 0) {
    EXPECT_TRUE(std::isnan(got.logprob) && got.top.empty()) << "request " << r;
    return;
  }
  const RawLogprobRow lp = raw_logprobs_row(raw.data() + r * V, V, num_logprobs);
  const float sampled = sampling::token_logprob(raw[r * V + result.sampled[r]], lp.logit_max, lp.mass);
  EXPECT_TRUE(same_bits(got.logprob, sampled)) << "request " << r;
  ASSERT_EQ(got.top.size(), lp.top.size());
  for (size_t k = 0; k < lp.top.size(); ++k) {
    EXPECT_EQ(got.top[k].first, lp.top[k].first) << "request " << r << " rank " << k;
    EXPECT_TRUE(same_bits(got.top[k].second, lp.top[k].second)) << "request " << r;
  }
}

// One step of the next tokens of some requests, run through execute() twice: with neutral
// sampling (penalties and logprobs off; the forward pass does not read them) for the raw logits,
// then as the requests ask.
struct RawAndSampledStep {
  std::vector<ScheduledRequest> plain, chunks;
  std::vector<float> raw, penalized;  // the logits after each run
  StepResult result;                  // of the run as asked
};

template <typename Param>
class RunnerSamplingTest : public RunnerTest<Param> {
 protected:
  // run_graph_and_eager, plus: the logprobs bit-identical, present for every request exactly when
  // some request asks (else none), each top list as long as asked, each logprob NaN exactly when
  // not asked and a log probability (<= 0) otherwise.
  StepResult expect_sampling_graph_equals_eager(const std::vector<ScheduledRequest>& chunks, const std::string& what) {
    const GraphAndEager step = this->run_graph_and_eager(chunks, what);
    const StepResult& graph = step.graph;
    expect_same_logprobs(graph.logprobs, step.eager.logprobs, what);
    bool any = false;
    for (const ScheduledRequest& c : chunks) any = any || c.sampling.num_logprobs >= 0;
    EXPECT_EQ(graph.logprobs.size(), any ? chunks.size() : 0u) << what;
    for (size_t r = 0; r < graph.logprobs.size(); ++r) {
      const int32_t n = chunks[r].sampling.num_logprobs;
      EXPECT_EQ(static_cast<int64_t>(graph.logprobs[r].top.size()), std::max<int64_t>(n, 0)) << what;
      EXPECT_EQ(std::isnan(graph.logprobs[r].logprob), n < 0) << what << " request " << r;
      if (n >= 0) {
        EXPECT_LE(graph.logprobs[r].logprob, 0.0f) << what << " request " << r;
      }
    }
    return graph;
  }

  // Eight rounds: decode batches of 1 to 10 requests (buckets of 4, 8 and 16 leave padded rows)
  // and mixed batches, with mixed sampling settings and, on about a request in three, a logit bias
  // (some of it on the request's own tokens, which its penalties may list too), on about one in
  // three a token mask (constrained and unconstrained requests mixed in one batch; every sampled
  // token of a constrained request is one its mask allows), three steps each, every sampled token
  // appended to its request's output so that the penalty counts grow; graph against eager at every
  // step. Returns how many steps replayed a graph.
  int64_t padded_mixed_rounds_graph_vs_eager(std::mt19937& rng) {
    int64_t replays = 0;
    std::mt19937 bias_rng(77);  // its own, so that the rest draws what it drew before biases existed
    std::mt19937 mask_rng(91);  // and the masks theirs
    for (int round = 0; round < 8; ++round) {
      const bool mixed = round % 2 == 1;
      const int64_t batch = 1 + (round * 3) % 10;
      std::vector<TestRequest> requests;
      std::vector<int64_t> chunk_lens;
      for (int64_t i = 0; i < batch; ++i) {
        const int64_t chunk = mixed && i % 3 == 0 ? 1 + static_cast<int64_t>(rng() % 40) : 1;
        const int64_t prompt = 5 + static_cast<int64_t>(rng() % 60) + (chunk > 1 ? chunk : 0);
        requests.push_back(this->request(rng, prompt, chunk > 1 ? 0 : static_cast<int64_t>(rng() % 12), chunk,
                                         mixed_params(rng)));
        if (bias_rng() % 3 == 0) requests.back().logit_bias = random_logit_bias(bias_rng, requests.back().tokens);
        if (mask_rng() % 3 == 0)
          requests.back().token_mask =
              random_token_mask(mask_rng, this->vocab(), 1 + static_cast<int64_t>(mask_rng() % (this->vocab() / 4)));
        chunk_lens.push_back(chunk);
      }
      for (int step = 0; step < 3; ++step) {
        std::vector<ScheduledRequest> chunks;
        for (size_t i = 0; i < requests.size(); ++i) chunks.push_back(this->next_chunk(requests[i], chunk_lens[i]));
        const std::string what = "round " + std::to_string(round) + " step " + std::to_string(step);
        const StepResult result = expect_sampling_graph_equals_eager(chunks, what);
        replays += result.replayed;
        for (size_t i = 0; i < requests.size(); ++i) {
          if (!requests[i].token_mask.empty()) {
            EXPECT_TRUE(mask_allows(requests[i].token_mask, result.sampled[i]))
                << what << " request " << i << " sampled " << result.sampled[i] << ", which its mask does not allow";
          }
          requests[i].computed += chunk_lens[i];
          requests[i].tokens.push_back(result.sampled[i]);  // the output grows: counts change
          requests[i].sampling.step += 1;
          chunk_lens[i] = 1;
        }
      }
    }
    return replays;
  }

  // Up to 8 distinct biased tokens, half of them from `tokens`, biases in [-100, 100].
  std::vector<std::pair<int32_t, float>> random_logit_bias(std::mt19937& rng, const std::vector<int32_t>& tokens) {
    std::uniform_real_distribution<float> value(-kMaxAbsLogitBias, kMaxAbsLogitBias);
    std::map<int32_t, float> bias;
    for (int i = 1 + static_cast<int>(rng() % 8); i > 0; --i)
      bias[i % 2 ? tokens[rng() % tokens.size()] : static_cast<int32_t>(rng() % this->vocab())] = value(rng);
    return {bias.begin(), bias.end()};
  }

  // The six requests of the raw-logits tests: prompts of 10 + 7i tokens with 6 + i outputs, all
  // but the last token computed, a mix of penalties (request 5's presence penalty as given), and
  // 4i logprobs, except none for request 4.
  std::vector<TestRequest> raw_logits_requests(std::mt19937& rng, float last_presence_penalty) {
    std::vector<TestRequest> requests;
    for (int i = 0; i < 6; ++i) {
      SamplingParams p = mixed_params(rng);
      p.repetition_penalty = i % 2 ? 1.7f : 1.0f;
      p.frequency_penalty = i % 3 ? -1.0f : 0.5f;
      p.presence_penalty = i == 5 ? last_presence_penalty : 0.75f;
      p.num_logprobs = i == 4 ? -1 : i * 4;
      requests.push_back(this->request(rng, 10 + 7 * i, 6 + i, 1, p));
    }
    return requests;
  }

  // The next token of each of `requests` in one step, run raw and as asked (see RawAndSampledStep).
  RawAndSampledStep raw_and_sampled_step(std::vector<TestRequest>& requests) {
    RawAndSampledStep s;
    for (TestRequest& r : requests) {
      s.chunks.push_back(this->next_chunk(r, 1));
      s.plain.push_back(s.chunks.back());
      s.plain.back().sampling = SamplingParams{};
      s.plain.back().token_mask = {};
    }
    const int64_t n = static_cast<int64_t>(requests.size());
    this->runner_->execute(s.plain);
    s.raw = copy_logits(*this->model_, n);
    s.result = this->runner_->execute(s.chunks);
    s.penalized = copy_logits(*this->model_, n);
    return s;
  }

  // Masks written by the executor's fill_masks, as the engine gives them (StepExecutor::execute),
  // 20 ms into the step: until then the rows allow token 0 alone, so a step that read them before
  // the fill would sample it. The step's ids, logprobs and logits equal those of the same step with
  // its masks in place from the start, bit for bit. A fill that fails ends the step with its error
  // (a GPU step that waits for the masks is released, not left waiting), and the next step, masks
  // in place, is again the same.
  void expect_late_masks_equal_masks_in_place(std::mt19937& rng) {
    std::vector<TestRequest> requests = raw_logits_requests(rng, 0.0f);
    const int64_t V = this->vocab(), n = static_cast<int64_t>(requests.size());
    std::vector<std::vector<int32_t>> masks(requests.size()), rows(requests.size());
    for (int i : {0, 3, 5}) masks[static_cast<size_t>(i)] = random_token_mask(rng, V, i == 5 ? 3 : V / 8);
    std::vector<ScheduledRequest> chunks;
    for (size_t i = 0; i < requests.size(); ++i) {
      chunks.push_back(this->next_chunk(requests[i], 1));
      rows[i] = masks[i];
      chunks[i].token_mask = rows[i];
    }
    const auto same_as = [&](const StepResult& a, const StepResult& b, const std::vector<float>& a_logits,
                             const std::string& what) {
      EXPECT_EQ(a.sampled, b.sampled) << what;
      expect_same_logprobs(a.logprobs, b.logprobs, what);
      const std::vector<float> logits = copy_logits(*this->model_, n);
      EXPECT_EQ(std::memcmp(a_logits.data(), logits.data(), logits.size() * 4), 0) << what << ": logits differ";
    };
    const StepResult in_place = this->runner_->execute(chunks);
    const std::vector<float> in_place_logits = copy_logits(*this->model_, n);
    for (size_t i = 0; i < masks.size(); ++i) {
      if (masks[i].empty()) continue;
      EXPECT_TRUE(mask_allows(masks[i], in_place.sampled[i])) << "request " << i;
      std::fill(rows[i].begin(), rows[i].end(), 0);  // the same storage: the span still points at it
      rows[i][0] = 1;
    }
    int fills = 0;
    const StepResult late = this->runner_->execute(chunks, [&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      for (size_t i = 0; i < masks.size(); ++i) std::copy(masks[i].begin(), masks[i].end(), rows[i].begin());
      ++fills;
    });
    EXPECT_EQ(fills, 1);
    same_as(in_place, late, in_place_logits, "masks filled late");
    EXPECT_THAT(error_of([&] { this->runner_->execute(chunks, [] { fail("the grammar failed"); }); }),
                ::testing::HasSubstr("the grammar failed"));
    const StepResult again = this->runner_->execute(chunks);
    same_as(in_place, again, in_place_logits, "the step after a failed fill");
  }

  // The token mask through the runner (sampling_params.h, item 0), on the six raw-logits requests:
  // requests 1 (greedy), 3 and 5 (sampled at temperature 1) constrained, request 5's mask allowing
  // 5 tokens, fewer than its 20 top logprobs. The step runs raw (no sampling, no mask), as asked,
  // then once more without the masks. Constrained requests sample allowed tokens (request 1 the
  // greedy one of its masked, penalized logits); every request's logprobs are those of its masked
  // raw logits (a masked token's is -inf); the unconstrained requests' ids, logprobs and logits
  // are bit-identical to the run without masks.
  void expect_masked_step_follows_the_definition(std::mt19937& rng) {
    std::vector<TestRequest> requests = raw_logits_requests(rng, 0.0f);
    const int64_t V = this->vocab(), n = static_cast<int64_t>(requests.size());
    for (int i : {1, 3, 5}) {
      SamplingParams& p = requests[static_cast<size_t>(i)].sampling;
      p.temperature = i == 1 ? 0.0f : 1.0f;
      p.top_k = 0;
      p.top_p = 1.0f;
      p.min_p = 0.0f;
      requests[static_cast<size_t>(i)].token_mask = random_token_mask(rng, V, i == 5 ? 5 : V / 8);
    }
    const RawAndSampledStep step = raw_and_sampled_step(requests);
    EXPECT_TRUE(step.result.replayed);
    std::vector<float> masked_raw;
    for (int64_t r = 0; r < n; ++r) {
      const std::vector<float> row = masked_row(step.raw.data() + r * V, V, requests[static_cast<size_t>(r)].token_mask);
      masked_raw.insert(masked_raw.end(), row.begin(), row.end());
    }
    for (int64_t r = 0; r < n; ++r) {
      const TestRequest& q = requests[static_cast<size_t>(r)];
      const int32_t token = step.result.sampled[static_cast<size_t>(r)];
      if (!q.token_mask.empty()) {
        EXPECT_TRUE(mask_allows(q.token_mask, token)) << "request " << r << " sampled " << token;
        int64_t masked = 0, wrong = 0;
        for (int64_t t = 0; t < V; ++t) {
          const float l = step.penalized[static_cast<size_t>(r * V + t)];
          masked += !mask_allows(q.token_mask, t);
          wrong += !mask_allows(q.token_mask, t) && !(std::isinf(l) && l < 0);
        }
        EXPECT_GT(masked, 0) << "request " << r;
        EXPECT_EQ(wrong, 0) << "request " << r << ": masked tokens whose logit is not -inf";
      }
      test::expect_logprobs_of_raw_logits(step.result, masked_raw, V, r, q.sampling.num_logprobs);
    }
    // Request 1 is greedy: the lowest id of the maximum of its masked, penalized logits.
    const float* row1 = step.penalized.data() + V;
    EXPECT_EQ(step.result.sampled[1], std::max_element(row1, row1 + V) - row1);
    // Request 5 allows 5 tokens: its other 15 top logprobs are of masked tokens, -inf.
    const TokenLogprobs& lp5 = step.result.logprobs[5];
    ASSERT_EQ(lp5.top.size(), 20u);
    for (size_t k = 0; k < lp5.top.size(); ++k) {
      EXPECT_EQ(k < 5, std::isfinite(lp5.top[k].second)) << "rank " << k;
      EXPECT_EQ(k < 5, mask_allows(requests[5].token_mask, lp5.top[k].first)) << "rank " << k;
    }
    // The same step without any mask: the unconstrained requests' results do not move a bit.
    std::vector<ScheduledRequest> unmasked = step.chunks;
    for (ScheduledRequest& c : unmasked) c.token_mask = {};
    const StepResult plain = this->runner_->execute(unmasked);
    const std::vector<float> plain_logits = copy_logits(*this->model_, n);
    for (int64_t r : {0, 2, 4}) {
      const std::string what = "unconstrained request " + std::to_string(r);
      EXPECT_EQ(plain.sampled[static_cast<size_t>(r)], step.result.sampled[static_cast<size_t>(r)]) << what;
      expect_same_logprobs({plain.logprobs[static_cast<size_t>(r)]}, {step.result.logprobs[static_cast<size_t>(r)]},
                           what);
      EXPECT_EQ(std::memcmp(plain_logits.data() + r * V, step.penalized.data() + r * V, static_cast<size_t>(V) * 4), 0)
          << what;
    }
  }
};

}  // namespace fg::test
