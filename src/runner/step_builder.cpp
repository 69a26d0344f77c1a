// runner/step_builder.cpp — real rows from the scheduler, padded rows from the step table, and the
// penalty lists of the requests that have penalties.
#include "runner/step_builder.h"

#include <algorithm>
#include <bit>

#include "core/error.h"

namespace fg {

StepShape step_shape(const std::vector<ScheduledRequest>& requests) {
  StepShape s;
  s.num_reqs = static_cast<int64_t>(requests.size());
  s.uniform_decode = !requests.empty();
  for (const ScheduledRequest& r : requests) {
    const int64_t n = static_cast<int64_t>(r.token_ids.size());
    s.num_tokens += n;
    s.num_logits += r.all_logits ? n : 1;
    s.uniform_decode = s.uniform_decode && n == 1;
  }
  return s;
}

int64_t real_numel(StepField field, const StepLayout& layout, const StepShape& shape) {
  switch (step_field(field).extent) {
    case Extent::kTokens: return shape.num_tokens;
    case Extent::kRequests: return shape.num_reqs;
    case Extent::kRequestOffsets: return shape.num_reqs + 1;
    case Extent::kBlockTable: return shape.num_reqs * layout.max_blocks_per_seq;
    case Extent::kLogitsRows: return shape.num_logits;
    case Extent::kPenaltyEntries: return layout.numel(field);  // never padded
    case Extent::kMaskRows: return shape.num_reqs * layout.mask_words;
  }
  FG_ASSERT(false);
}

namespace {

// The structural fields of request r's rows: its tokens, offsets, context and block-table row.
void stage_request(const ScheduledRequest& req, int64_t r, const StepLayout& layout, const PaddingContract& contract,
                   int64_t block_size, void* base, int64_t& token, int64_t& logits_row) {
  const int64_t n = static_cast<int64_t>(req.token_ids.size());
  const int64_t total = req.num_computed + n;
  const int64_t B = layout.max_blocks_per_seq;
  FG_CHECK(n >= 1, "request {} of the step runs no tokens", r);
  FG_CHECK(static_cast<int64_t>(req.block_ids.size()) * block_size >= total,
           "request {} needs {} tokens of KV blocks but holds {} blocks of {}", r, total, req.block_ids.size(),
           block_size);
  FG_CHECK(static_cast<int64_t>(req.block_ids.size()) <= B, "request {} holds {} blocks, a block-table row {}", r,
           req.block_ids.size(), B);
  int32_t* input_ids = layout.at<int32_t>(base, StepField::kInputIds);
  int32_t* positions = layout.at<int32_t>(base, StepField::kPositions);
  int64_t* slots = layout.at<int64_t>(base, StepField::kSlotMapping);
  int32_t* logits_indices = layout.at<int32_t>(base, StepField::kLogitsIndices);
  for (int64_t j = 0; j < n; ++j, ++token) {
    const int64_t position = req.num_computed + j;
    input_ids[token] = req.token_ids[j];
    positions[token] = static_cast<int32_t>(position);
    slots[token] = static_cast<int64_t>(req.block_ids[position / block_size]) * block_size + position % block_size;
    if (req.all_logits || j + 1 == n) logits_indices[logits_row++] = static_cast<int32_t>(token);
  }
  layout.at<int32_t>(base, StepField::kQueryStartLoc)[r + 1] = static_cast<int32_t>(token);
  layout.at<int32_t>(base, StepField::kSeqLens)[r] = static_cast<int32_t>(total);
  int32_t* row = layout.at<int32_t>(base, StepField::kBlockTable) + r * B;
  std::copy(req.block_ids.begin(), req.block_ids.end(), row);
  std::fill(row + req.block_ids.size(), row + B, static_cast<int32_t>(contract.block_table_fill));
}

// The logit-bias lists, after every penalty entry: (token, bias as F32 bits), CSR over the requests.
void stage_logit_bias(const std::vector<ScheduledRequest>& requests, const StepLayout& layout, void* base,
                      StagedStep& staged) {
  int32_t* offsets = layout.at<int32_t>(base, StepField::kLogitBiasOffsets);
  int32_t* entries = layout.at<int32_t>(base, StepField::kPenaltyEntries);
  offsets[0] = static_cast<int32_t>(staged.penalty_entries);
  for (size_t r = 0; r < requests.size(); ++r) {
    const auto& bias = requests[r].logit_bias;
    FG_CHECK(staged.penalty_entries + static_cast<int64_t>(bias.size()) <= layout.penalty_capacity,
             "the step's penalty and logit-bias lists need at least {} entries (up to request {}'s logit bias), more "
             "than RunnerOptions::max_penalty_entries = {}; raise max_penalty_entries or schedule fewer such "
             "requests per step",
             staged.penalty_entries + static_cast<int64_t>(bias.size()), r, layout.penalty_capacity);
    for (const auto& [token, value] : bias) {
      entries[2 * staged.penalty_entries] = token;
      entries[2 * staged.penalty_entries + 1] = std::bit_cast<int32_t>(value);
      ++staged.penalty_entries;
    }
    offsets[r + 1] = static_cast<int32_t>(staged.penalty_entries);
  }
}

// Request r's sampling parameters, one row of every sampling field.
void stage_sampling(const SamplingParams& params, int64_t r, const StepLayout& layout, void* base) {
  for (size_t i = 0; i < kSamplingFields.size(); ++i)
    std::visit(
        [&](auto member) {
          layout.at<member_type_t<decltype(member)>>(base, sampling_step_field(i))[r] = params.*member;
        },
        kSamplingFields[i].param);
}

}  // namespace

StagedStep stage_step(const std::vector<ScheduledRequest>& requests, const StepLayout& layout,
                      const PaddingContract& contract, int64_t block_size, void* base, PenaltyListBuilder* builder) {
  const StepShape shape = step_shape(requests);
  FG_CHECK(shape.num_tokens <= layout.num_tokens && shape.num_reqs <= layout.num_reqs,
           "a step of {} tokens over {} requests does not fit ({}, {})", shape.num_tokens, shape.num_reqs,
           layout.num_tokens, layout.num_reqs);
  FG_CHECK(shape.num_logits <= layout.num_logits,
           "the step's requests want {} logits rows, its layout holds {}: a sampled step takes one row per request "
           "(all_logits is for reference runs, upload_step)",
           shape.num_logits, layout.num_logits);
  PenaltyListBuilder local;
  if (builder == nullptr) builder = &local;
  int32_t* penalty_offsets = layout.at<int32_t>(base, StepField::kPenaltyOffsets);
  int32_t* penalty_entries = layout.at<int32_t>(base, StepField::kPenaltyEntries);

  StagedStep staged;
  int64_t token = 0, logits_row = 0;
  layout.at<int32_t>(base, StepField::kQueryStartLoc)[0] = 0;
  penalty_offsets[0] = 0;
  for (int64_t r = 0; r < shape.num_reqs; ++r) {
    const ScheduledRequest& req = requests[r];
    stage_request(req, r, layout, contract, block_size, base, token, logits_row);
    const SamplingParams& sp = req.sampling;
    stage_sampling(sp, r, layout, base);
    staged.any_logprobs = staged.any_logprobs || sp.num_logprobs >= 0;
    if (sp.has_penalties()) {
      const int64_t listed = builder->collect(req.prompt_ids, req.output_ids, sp.repetition_penalty != 1.0f, r);
      FG_CHECK(staged.penalty_entries + listed <= layout.penalty_capacity,
               "the step's penalty lists need at least {} entries (distinct prompt and output tokens of the requests "
               "with penalties, up to request {}), more than RunnerOptions::max_penalty_entries = {}; raise "
               "max_penalty_entries or schedule fewer such requests per step",
               staged.penalty_entries + listed, r, layout.penalty_capacity);
      builder->write(penalty_entries + 2 * staged.penalty_entries);
      staged.penalty_entries += listed;
    }
    penalty_offsets[r + 1] = static_cast<int32_t>(staged.penalty_entries);
  }
  stage_logit_bias(requests, layout, base, staged);
  // The padded region, exactly as the table declares.
  for_each_padded_field(layout, shape, contract, base,
                        [](const StepFieldSpec&, auto* data, int64_t real, int64_t all, auto value) {
                          std::fill(data + real, data + all, value);
                        });
  staged.copy_bytes = layout.copy_bytes(staged.penalty_entries);
  return staged;
}

DeviceStep upload_step(Backend& backend, const std::vector<ScheduledRequest>& requests, int64_t block_size,
                       int64_t max_blocks_per_seq) {
  const StepShape shape = step_shape(requests);
  int64_t penalty_entries = 0;
  PenaltyListBuilder builder;
  for (size_t r = 0; r < requests.size(); ++r) {
    FG_CHECK(requests[r].token_mask.empty(),
             "upload_step: request {} carries a token mask; masks live in the runner's mask buffer and are applied "
             "by its sampled steps (runner/token_mask.h), not by a reference run", r);
    const SamplingParams& sp = requests[r].sampling;
    if (sp.has_penalties())
      penalty_entries += builder.collect(requests[r].prompt_ids, requests[r].output_ids, sp.repetition_penalty != 1.0f,
                                         static_cast<int64_t>(r));
    penalty_entries += static_cast<int64_t>(requests[r].logit_bias.size());
  }
  DeviceStep step;
  step.layout = StepLayout::make(shape.num_tokens, shape.num_reqs, max_blocks_per_seq, penalty_entries,
                                 shape.num_logits);
  std::vector<int64_t> staging((step.layout.total_bytes + 7) / 8);  // 8-byte aligned, as every field needs
  const StagedStep staged = stage_step(requests, step.layout, PaddingContract{}, block_size, staging.data(), &builder);
  step.arena = backend.allocate(DType::kI32, {static_cast<int64_t>(step.layout.total_bytes / 4)});
  backend.copy_from_host(step.arena.tensor.rows(0, static_cast<int64_t>(staged.copy_bytes / 4)), staging.data());
  step.views = step.layout.views(step.arena.tensor.data, backend.device());
  return step;
}

}  // namespace fg
