// runner/step_fields.cpp — the rows of the step table.
#include "runner/step_fields.h"

#include <string_view>

namespace fg {

namespace {

constexpr StepFieldSpec input(const char* name, DType dtype, Extent extent, PadRule pad, const char* why,
                              Tensor StepInputs::*view, int64_t PaddingContract::*fill = nullptr) {
  return {name, dtype, extent, pad, why, fill, nullptr, view, nullptr, nullptr};
}
constexpr StepFieldSpec attention(const char* name, DType dtype, Extent extent, PadRule pad, const char* why,
                                  Tensor AttentionMetadata::*view, int64_t PaddingContract::*fill = nullptr) {
  return {name, dtype, extent, pad, why, fill, nullptr, nullptr, view, nullptr};
}
constexpr StepFieldSpec penalty(const char* name, Extent extent, PadRule pad, const char* why,
                                Tensor PenaltyTensors::*view) {
  return {name, DType::kI32, extent, pad, why, nullptr, nullptr, nullptr, nullptr, view};
}

// Why padded sampling rows hold their neutral values, for checked-mode messages.
const char* why_neutral(const SamplingField& f) {
  if (std::string_view(f.name) == "num_logprobs") return "padded rows want no logprobs";
  if (!f.read_by_sample) return "padded rows have no penalties";
  return "padded rows sample greedily";
}

std::array<StepFieldSpec, kNumStepFields> make_step_fields() {
  using enum Extent;
  using enum PadRule;
  std::array<StepFieldSpec, kNumStepFields> t{};
  const auto at = [&t](StepField f) -> StepFieldSpec& { return t[static_cast<size_t>(f)]; };
  // clang-format off
  //                                      name               dtype        extent           padded rows hold
  at(StepField::kInputIds)       = input("input_ids",       DType::kI32, kTokens,         kContractFill, "padding",
                                         &StepInputs::input_ids, &PaddingContract::input_ids_fill);
  at(StepField::kPositions)      = input("positions",       DType::kI32, kTokens,         kContractFill, "padding",
                                         &StepInputs::positions, &PaddingContract::positions_fill);
  at(StepField::kSlotMapping)    = input("slot_mapping",    DType::kI64, kTokens,         kContractFill,
                                         "padding: KV writes are skipped", &StepInputs::slot_mapping,
                                         &PaddingContract::slot_mapping_fill);
  at(StepField::kQueryStartLoc)  = attention("query_start_loc", DType::kI32, kRequestOffsets, kRepeatLast,
                                         "the last real offset repeated: padded requests own zero tokens and offsets "
                                         "never decrease", &AttentionMetadata::query_start_loc);
  at(StepField::kSeqLens)        = attention("seq_lens",    DType::kI32, kRequests,       kContractFill, "padding",
                                         &AttentionMetadata::seq_lens, &PaddingContract::seq_lens_fill);
  at(StepField::kLogitsIndices)  = input("logits_indices",  DType::kI32, kLogitsRows,     kZero, "padding",
                                         &StepInputs::logits_indices);
  at(StepField::kBlockTable)     = attention("block_table", DType::kI32, kBlockTable,     kContractFill,
                                         "padded rows point at the null block", &AttentionMetadata::block_table,
                                         &PaddingContract::block_table_fill);
  at(StepField::kPenaltyOffsets) = penalty("penalty_offsets",            kRequestOffsets, kRepeatLast,
                                         "padded rows have empty lists", &PenaltyTensors::offsets);
  at(StepField::kLogitBiasOffsets) = penalty("logit_bias_offsets",       kRequestOffsets, kRepeatLast,
                                         "padded rows have no logit bias", &PenaltyTensors::bias_offsets);
  at(StepField::kPenaltyEntries) = penalty("penalty_entries",            kPenaltyEntries, kUnpadded, "",
                                         &PenaltyTensors::entries);
  at(StepField::kTokenMask)      = {"token_mask",           DType::kI32, kMaskRows,       kAllOnes,
                                    "padded rows allow every token (all ones)", nullptr, nullptr, nullptr, nullptr,
                                    nullptr, &StepViews::token_mask};
  // clang-format on
  for (size_t i = 0; i < kSamplingFields.size(); ++i) {
    const SamplingField& f = kSamplingFields[i];
    at(sampling_step_field(i)) = {f.name, sampling_field_dtype(f), kRequests, kNeutral, why_neutral(f), nullptr, &f};
  }
  return t;
}

}  // namespace

const std::array<StepFieldSpec, kNumStepFields>& step_fields() {
  static const std::array<StepFieldSpec, kNumStepFields> table = make_step_fields();
  return table;
}

const StepFieldSpec& step_field(StepField field) { return step_fields()[static_cast<size_t>(field)]; }

}  // namespace fg
