// runner/token_mask.h — the step's token-mask buffer (step_fields.h, StepField::kTokenMask): which
// of its rows a step writes, and the host mirror it writes them from.
//
// The buffer is [max_num_seqs, W] I32 on the device (W = ceil(V / 32): 16 KiB a row at a 128k
// vocabulary), persistent at one address that every graph reads, and outside the one staged block:
// copying it every step would cost megabytes. Instead it keeps an invariant:
//
//   after a step's upload op, row r of the device buffer holds the mask of the step's request r
//   when that request is constrained, and all ones otherwise (other real rows, padded rows, rows
//   past the step).
//
// A pinned host mirror holds the same bytes. A step writes into the mirror the masks of its
// constrained rows and all ones into the rows the previous step constrained and this one does not,
// and flags exactly those rows; the step's own upload op (Backend::upload_token_mask, inside the
// graph, just before the mask is applied) copies the flagged rows. So a step whose requests are
// unconstrained, after a step whose requests were too, copies no mask bytes; a step copies at most
// its constrained rows plus the previous step's.
//
// When the rows are written depends on the backend (ModelRunner::execute): on a GPU, after the
// step was launched, while its forward runs — the host then publishes them and the upload op waits
// for that publication — and before the launch where ops run as they are called (the CPU) or in
// checked mode, which reads the mirror before the step runs. After a step refused by checked mode
// or a mask fill that failed, the runner calls forget(), and the next step rewrites every row.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runner/step_io.h"

namespace fg {

class TokenMaskRows {
 public:
  // Consecutive rows to copy from the mirror to the device: [first, first + count).
  struct Run {
    int64_t first = 0;
    int64_t count = 0;
  };

  // A buffer of `rows` rows of `words` words (ceil(V / 32)); the mirror starts (and must be given)
  // all ones, as the device buffer.
  TokenMaskRows(int64_t rows, int64_t words);

  // Writes the masks of `requests` into `mirror` ([rows, words]) and resets to all ones the rows
  // the previous stage constrained that this one does not; returns the rows that changed, as runs.
  // Throws naming the request, before touching anything, when a mask is not `words` words long or
  // there are more requests than rows.
  std::vector<Run> stage(const std::vector<ScheduledRequest>& requests, int32_t* mirror);

  // After a step was refused between its stage and its replay (checked mode), or anything else
  // wrote the mirror: the next stage rewrites and copies every row, which restores the invariant.
  void forget() { std::fill(constrained_.begin(), constrained_.end(), uint8_t{1}); }

  // Row r of the last stage holds a mask (r < that step's requests).
  bool constrained(int64_t r) const { return constrained_[static_cast<size_t>(r)] != 0; }
  int64_t words() const { return words_; }
  int64_t rows() const { return rows_; }

 private:
  int64_t rows_ = 0;
  int64_t words_ = 0;
  std::vector<uint8_t> constrained_;  // [rows]: row r holds a mask in the mirror and the device
  std::vector<uint8_t> changed_;      // [rows]: scratch of stage()
};

}  // namespace fg
