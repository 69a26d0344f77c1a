// attention/attention_contract.h — what an attention backend promises and requires, in a form
// the runner can act on and check without any CUDA: its graph-support level, and the value every
// persistent metadata field must hold past the real rows of a padded step (DESIGN.md, "The core
// contract", points 4 and 5).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fg {

// Which batches a backend can run as a captured graph.
enum class GraphSupport {
  kAlways,         // any batch, mixed prefill + decode included
  kUniformDecode,  // only batches where every request has the same query length (e.g. 1)
  kNever,          // eager only
};
const char* graph_support_name(GraphSupport support);

// Fill values of the padded region of each step buffer. query_start_loc has no fill value: its
// padded entries always repeat the last real offset (non-decreasing; padded requests own zero
// query tokens). A backend that needs more than this lists it in `extra_requirements`.
struct PaddingContract {
  // Each value is stored in the field's own element type (runner/step_fields.h); int64_t here so
  // that the runner's field table can point at any of them.
  int64_t seq_lens_fill = 0;       // seq_lens[num_reqs ..]
  int64_t slot_mapping_fill = -1;  // slot_mapping[num_tokens ..]; kernels skip negative slots
  int64_t block_table_fill = 0;    // every entry of padded rows (and past a real row's blocks): the null block
  int64_t input_ids_fill = 0;      // a valid id; results of padded tokens are discarded
  int64_t positions_fill = 0;      // a valid position
  bool requires_uniform_query_len = false;  // every real request has the same query length
  std::vector<std::string> extra_requirements;  // in words, for logs and checked-mode messages
};

}  // namespace fg
