// runner/step_builder.h — the one builder of a step's inputs: the real rows from the scheduled
// requests, then every padded row exactly as the step table (step_fields.h) and the attention
// backend's padding contract declare (DESIGN.md, "The core contract", point 4). An eager step is
// the same build into a layout of the step's real sizes, where nothing is padded; a graph step is
// built into its bucket's layout.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "attention/attention_contract.h"
#include "backend/backend.h"
#include "runner/penalty_lists.h"
#include "runner/step_io.h"
#include "runner/step_layout.h"

namespace fg {

struct StepShape {
  int64_t num_tokens = 0;  // real
  int64_t num_reqs = 0;    // real
  int64_t num_logits = 0;  // logits rows the requests want (num_reqs unless some want all_logits)
  bool uniform_decode = false;  // every request runs exactly one token
};
StepShape step_shape(const std::vector<ScheduledRequest>& requests);

// What stage_step wrote beyond the layout's fixed fields.
struct StagedStep {
  int64_t penalty_entries = 0;  // list entries used (all rows): penalties, then logit biases
  bool any_logprobs = false;    // some real row has num_logprobs >= 0
  size_t copy_bytes = 0;        // layout.copy_bytes(penalty_entries): the one copy to make
};

// Stages `requests` into `base` laid out by `layout` (whose padded sizes hold them); rows past
// the real ones get the values the step table declares. Throws if a request does not fit the
// layout, naming RunnerOptions::max_penalty_entries when the penalty lists do not fit its capacity.
// `builder` may be null (a temporary one is used).
StagedStep stage_step(const std::vector<ScheduledRequest>& requests, const StepLayout& layout,
                      const PaddingContract& contract, int64_t block_size, void* base,
                      PenaltyListBuilder* builder = nullptr);

// The field's real elements in a step of `shape`.
int64_t real_numel(StepField field, const StepLayout& layout, const StepShape& shape);

// Calls visit(spec, data, real, all, value) for every padded field of a step of `shape` staged at
// `base`: its row of the table, its elements as their C++ type, its real and padded element counts,
// and the value its elements [real, all) hold by the table's rule (what stage_step writes there and
// what checked mode expects). Fields in a buffer of their own (the token mask) are visited only
// when `mask_base` is given, at that base: stage_step does not fill them (runner/token_mask.h keeps
// their padded rows all ones); checked mode checks them.
template <typename Visit>
void for_each_padded_field(const StepLayout& layout, const StepShape& shape, const PaddingContract& contract,
                           void* base, Visit&& visit, void* mask_base = nullptr);

// One step's inputs in backend memory, unpadded, in their own allocation: for reference runs and
// tools that drive the model directly, outside the runner's persistent buffers (e.g. a prefill that
// returns every position's logits, ScheduledRequest::all_logits).
struct DeviceStep {
  StepLayout layout;
  StepViews views;  // views.inputs is what LlamaModel::forward takes
  Allocation arena;
};
DeviceStep upload_step(Backend& backend, const std::vector<ScheduledRequest>& requests, int64_t block_size,
                       int64_t max_blocks_per_seq);

// The value of the elements of `field` past its `real` ones (> 0 for an offsets field).
template <typename T>
T padding_value(const StepFieldSpec& spec, const T* data, int64_t real, const PaddingContract& contract) {
  switch (spec.pad) {
    case PadRule::kContractFill: return static_cast<T>(contract.*spec.contract_fill);
    case PadRule::kRepeatLast: return data[real - 1];
    case PadRule::kNeutral: {
      T value{};
      std::visit([&](auto member) { value = static_cast<T>(SamplingParams{}.*member); }, spec.sampling->param);
      return value;
    }
    case PadRule::kZero: return T{0};
    case PadRule::kAllOnes: {
      T value;
      std::memset(&value, 0xFF, sizeof(T));
      return value;
    }
    case PadRule::kUnpadded: break;
  }
  FG_ASSERT(false && "a field that is never padded has no padding value");
}

template <typename Visit>
void for_each_padded_field(const StepLayout& layout, const StepShape& shape, const PaddingContract& contract,
                           void* base, Visit&& visit, void* mask_base) {
  for (size_t i = 0; i < kNumStepFields; ++i) {
    const StepField field = static_cast<StepField>(i);
    const StepFieldSpec& spec = step_field(field);
    if (spec.pad == PadRule::kUnpadded) continue;
    if (spec.own_buffer && mask_base == nullptr) continue;
    const int64_t real = real_numel(field, layout, shape), all = layout.numel(field);
    visit_host_type(spec.dtype, [&](auto zero) {
      using T = decltype(zero);
      T* data = layout.at<T>(spec.own_buffer ? mask_base : base, field);
      visit(spec, data, real, all, padding_value<T>(spec, data, real, contract));
    });
  }
}

}  // namespace fg
