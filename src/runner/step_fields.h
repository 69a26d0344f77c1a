// runner/step_fields.h — THE table of a step's persistent input fields (DESIGN.md, "The core
// contract", points 1 and 4): for each field, its name, element type, extent and what it holds past
// the real rows of a padded step. The layout (step_layout.h), the views the model and the sampler
// read, the staging of real and padded rows (step_builder.h) and checked mode (input_check.h) are
// all driven by it, so a new field is one row here (plus the code that computes its real values).
//
// The per-request sampling fields are not spelled out again: they are the rows of kSamplingFields
// (sampling/sampling_params.h), each [R] and padded with its neutral value.
//
// Every field but one lives in the one staged block (step_layout.h) that a step copies to the
// device. The token mask ([R, ceil(V/32)] words, 16 KiB a row at a 128k vocabulary) is a
// persistent buffer of its own: copying it with the block would cost every step megabytes. Its
// invariant (runner/token_mask.h): the device buffer holds all ones in every row except the rows
// of the requests the last step constrained, which hold their masks; a step copies only the rows
// it constrains and the rows the previous step constrained and this one does not (reset to all
// ones), so a step with no constrained request, after one without, copies no mask bytes. Padded
// rows and unconstrained requests' rows are therefore all ones, the table's rule for the field.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <variant>

#include "attention/attention_contract.h"
#include "core/dtype.h"
#include "core/error.h"
#include "model/step.h"
#include "sampling/sampling_params.h"

namespace fg {

// Every field of a step, in layout order. The penalty entries come last: a step copies the layout
// only as far as the entries it uses, so a step without penalties does not pay for their capacity.
// They hold the penalty lists, then the logit-bias lists (sampling_params.h, PenaltyTensors).
enum class StepField : uint8_t {
  kInputIds,
  kPositions,
  kSlotMapping,
  kQueryStartLoc,
  kSeqLens,
  kLogitsIndices,
  kBlockTable,
  kPenaltyOffsets,
  kLogitBiasOffsets,
  kFirstSampling,  // kSamplingFields[i] is field kFirstSampling + i
  kPenaltyEntries = kFirstSampling + kSamplingFields.size(),
  kTokenMask,  // not in the staged block: a persistent buffer of its own (see above)
};
inline constexpr size_t kNumStepFields = static_cast<size_t>(StepField::kTokenMask) + 1;

constexpr StepField sampling_step_field(size_t i) {
  return static_cast<StepField>(static_cast<size_t>(StepField::kFirstSampling) + i);
}
// The step field of the sampling parameter `member`, e.g. &SamplingParams::top_k.
template <typename T>
constexpr StepField sampling_step_field(T SamplingParams::*member) {
  size_t i = 0;
  while (i < kSamplingFields.size()) {
    const auto* m = std::get_if<T SamplingParams::*>(&kSamplingFields[i].param);
    if (m != nullptr && *m == member) break;
    ++i;
  }
  FG_ASSERT(i < kSamplingFields.size());
  return sampling_step_field(i);
}

// The dimensions a field spans, from the step's padded shape: T tokens, R requests, B block-table
// entries per request, L logits rows (R in a sampled step), C penalty entries, W token-mask words
// per request (ceil(V / 32)).
enum class Extent : uint8_t {
  kTokens,          // [T]
  kRequests,        // [R]
  kRequestOffsets,  // [R + 1]: request r owns [x[r], x[r + 1])
  kBlockTable,      // [R, B]
  kLogitsRows,      // [L]
  kPenaltyEntries,  // [C, 2]
  kMaskRows,        // [R, W]
};

// What a field holds past its real rows.
enum class PadRule : uint8_t {
  kContractFill,  // the attention backend's declared value (PaddingContract::*contract_fill)
  kRepeatLast,    // offsets: the last real offset, repeated; never -1 (the seed's bug): padded
                  // requests own nothing and the offsets never decrease
  kNeutral,       // the sampling field's neutral value, SamplingParams{}'s: greedy, no filters, no
                  // penalties, no logprobs
  kZero,          // 0: a valid row whose result is discarded
  kUnpadded,      // nothing past the used prefix is read or copied (the offsets say how far)
  kAllOnes,       // every bit set: the token mask's rows allow every token
};

// Where a field's view goes: exactly one member is set.
struct StepViews {
  StepInputs inputs;
  SamplingTensors sampling;
  PenaltyTensors penalties;
  Tensor token_mask;  // I32 [R, W], in its own buffer; undefined where a step has none (no op reads it)
};

struct StepFieldSpec {
  const char* name;
  DType dtype;
  Extent extent;
  PadRule pad;
  const char* why_padded;  // for checked-mode messages
  int64_t PaddingContract::*contract_fill = nullptr;  // with kContractFill
  const SamplingField* sampling = nullptr;           // the sampling rows
  Tensor StepInputs::*input = nullptr;
  Tensor AttentionMetadata::*attention = nullptr;
  Tensor PenaltyTensors::*penalty = nullptr;
  Tensor StepViews::*own_buffer = nullptr;  // set: the field is a persistent buffer of its own, outside
                                            // the staged block (the layout gives it offset 0)
};

// The row of `field`.
const StepFieldSpec& step_field(StepField field);
// Every row, in layout order.
const std::array<StepFieldSpec, kNumStepFields>& step_fields();

}  // namespace fg
