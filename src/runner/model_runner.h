// runner/model_runner.h — runs engine steps: stages each step's inputs into persistent buffers
// (padded per the attention backend's contract), ships them with one host-to-device copy, and
// replays the graph of the smallest bucket that holds the step, or runs it eagerly when no graph
// can (DESIGN.md, "The core contract"). Sampling runs inside the graph, the token mask, penalties
// and logprobs included (sampling_params.h): only the sampled ids, and the logprobs when a request
// asked for them, come back to the host, in one copy. The token masks of constrained requests go
// to a persistent buffer of their own, row by row (runner/token_mask.h).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model/llama_model.h"
#include "runner/buckets.h"
#include "runner/input_check.h"
#include "runner/step_builder.h"
#include "runner/step_io.h"
#include "runner/step_layout.h"
#include "runner/token_mask.h"

namespace fg {

struct RunnerOptions {
  int64_t max_num_tokens = 512;  // token budget of one step; the model's activations hold this many
  int64_t max_num_seqs = 256;    // requests in one step
  int64_t max_model_len = 0;     // longest request context (0: the model's); sizes the block tables
  std::vector<int64_t> capture_sizes;  // empty: default_capture_sizes(max_num_tokens)
  bool enforce_eager = false;
  bool check_graph_inputs = false;
  bool prefer_uniform_decode = true;  // uniform-decode batches use their own buckets when there are
  // Capacity of a step's penalty lists: the distinct prompt and output tokens, summed over the
  // requests with penalties (the prompt counts only with a repetition penalty). 8 bytes each in the
  // pinned staging and the device arena, copied only as far as a step uses them; a step that needs
  // more fails naming this option.
  int64_t max_penalty_entries = int64_t{1} << 20;
};

struct RunnerStats {
  int64_t graph_steps = 0;
  int64_t eager_steps = 0;
  size_t graphs = 0;
  double capture_seconds = 0.0;
  size_t graph_memory_bytes = 0;
  // Host-to-device traffic of the token-mask buffer (runner/token_mask.h), over every step: a step
  // with no constrained request after one without adds nothing.
  int64_t mask_bytes_copied = 0;
  int64_t mask_copies = 0;
};

class ModelRunner final : public StepExecutor {
 public:
  // `log` receives one line per noteworthy event (capture summary, the first eager step of each
  // kind and why); by default lines go to stderr.
  ModelRunner(LlamaModel& model, const KvCache& kv, RunnerOptions options,
              std::function<void(const std::string&)> log = {});

  // Captures every bucket the attention backend's graph support allows, largest first;
  // `on_progress(captured, total)` follows each graph.
  void capture_graphs(const std::function<void(size_t, size_t)>& on_progress = {});

  // One step: graph replay when a captured bucket holds it, eager otherwise. With `fill_masks`,
  // the token masks are filled while the step's forward runs where the backend runs behind the
  // host and checked mode is off (StepExecutor::execute); before the step otherwise.
  StepResult execute(const std::vector<ScheduledRequest>& requests) override { return execute(requests, {}); }
  StepResult execute(const std::vector<ScheduledRequest>& requests, const std::function<void()>& fill_masks) override;
  // The same step unpadded, launch by launch with the real sizes: the reference for graph == eager.
  StepResult execute_eager(const std::vector<ScheduledRequest>& requests,
                           const std::function<void()>& fill_masks = {});
  // StepExecutor::prompt_logprobs, eagerly, in passes of at most max_num_seqs tokens (the model's
  // logits rows); prompt_logprobs.cpp.
  std::vector<TokenLogprobs> prompt_logprobs(std::span<const int32_t> tokens, int64_t first, int64_t last,
                                             std::span<const int32_t> block_ids, int32_t k) override;

  const RunnerStats& stats() const { return stats_; }
  const BucketTable& buckets() const { return buckets_; }
  int64_t max_blocks_per_seq() const { return max_blocks_per_seq_; }

  // Overwrites the host staging, the device step arena, the step outputs and the sampling scratch
  // with 0xFF bytes, so that a field a step forgot to write reads as -1 / NaN (tests call it
  // before steps). The token-mask buffer is not touched: it is not rewritten every step but kept
  // all ones outside constrained rows (runner/token_mask.h), and 0xFF is its neutral fill anyway.
  void poison_step_buffers();

  // For tests that must show what a wrong fill does: called on the staged host memory of a graph
  // step after the contract's padding was written, before checked mode and the copy.
  void set_staging_hook(std::function<void(const StepLayout&, void* staging)> hook) { staging_hook_ = std::move(hook); }
  // The same for the token-mask buffer's host mirror ([max_num_seqs, W] words), called after the
  // step's mask rows were staged, before they are copied and checked. Only the rows the step
  // stages are copied, so a row the hook alone changes reaches checked mode, not the device.
  void set_mask_staging_hook(std::function<void(const StepLayout&, int32_t* mirror)> hook) {
    mask_staging_hook_ = std::move(hook);
  }

 private:
  struct Captured {
    StepLayout layout;
    std::unique_ptr<Graph> graph;
  };

  // The layout of a step padded to (num_tokens, num_reqs).
  StepLayout layout_for(int64_t num_tokens, int64_t num_reqs) const;
  // Stages `requests` with `layout`, checks them when asked, copies them to the device arena. With
  // `with_masks`, their mask rows too, checked with them and published before the step runs.
  StagedStep upload(const std::vector<ScheduledRequest>& requests, const StepLayout& layout, bool padded_graph_step,
                    bool with_masks);
  // Writes the step's mask rows into the mirror and flags the rows the device must rewrite.
  void stage_masks(const std::vector<ScheduledRequest>& requests, const StepLayout& layout, bool padded_graph_step);
  // Tells the step that waits in upload_token_mask that the flagged rows are final.
  void publish_masks();
  // After the step was launched: fills and publishes its masks. When the fill fails, the step is
  // still given a publication (one that copies nothing), so that it ends rather than waits, and
  // the next step rewrites every row.
  void publish_masks_late(const std::vector<ScheduledRequest>& requests, const StepLayout& layout,
                          bool padded_graph_step, const std::function<void()>& fill_masks);
  // Fill the masks after the launch (true) or before it.
  bool masks_after_launch() const { return backend_.runs_behind_host() && !options_.check_graph_inputs; }
  // The ops of one step over the arena laid out by `layout`: forward, raw logprobs, penalties,
  // sampling, the sampled token's logprob. uniform_query_len as in AttentionMetadata.
  void enqueue_step(const StepLayout& layout, int64_t uniform_query_len);
  // The uniform_query_len an eager step passes: that of the bucket a graph would run it in, so
  // that a backend choosing its kernel by it (the `auto` attention) computes the batch as that
  // graph does (DESIGN.md point 7). A uniform decode batch that graphs run in a mixed bucket
  // (prefer_uniform_decode off, or no uniform bucket holds it) is run as mixed.
  int64_t eager_uniform_query_len(const StepShape& shape) const;
  // Views of the step's outputs for `rows` rows (fixed addresses, whatever `rows`).
  Tensor sampled_ids(int64_t rows) const;
  LogprobTensors logprob_outputs(int64_t rows) const;
  // The sampled ids of the real requests, and their logprobs when the step asked for any.
  StepResult read_results(const std::vector<ScheduledRequest>& requests, const StagedStep& staged);
  // The step outputs up to row n - 1's top logprobs (n <= max_num_seqs), in one copy; and rows
  // [0, wanted.size()) of such a copy as logprobs, row r with its top wanted[r] (-1: none).
  std::vector<int32_t> copy_outputs(int64_t n);
  std::vector<TokenLogprobs> logprobs_of(const std::vector<int32_t>& outputs, const std::vector<int32_t>& wanted) const;
  // Why a step cannot replay a graph, or "" when it can (sets *bucket).
  std::string graph_refusal(const StepShape& shape, Bucket* bucket) const;
  void log_once(const std::string& reason);

  LlamaModel& model_;
  Backend& backend_;
  const KvCache& kv_;
  RunnerOptions options_;
  std::function<void(const std::string&)> log_;
  BucketTable buckets_;
  int64_t max_blocks_per_seq_;
  InputCheckLimits limits_;

  Allocation staging_;  // host (pinned on GPUs): the largest layout's bytes
  Allocation arena_;    // device: the same bytes; every layout starts at its base
  // Step outputs, one block so that a step's results come back in one copy, 32-bit words:
  // ids I32 [S] | sampled logprob F32 [S] | top ids I32 [S, kMaxLogprobs] | top logprobs F32
  // [S, kMaxLogprobs], S = max_num_seqs.
  Allocation outputs_;
  Allocation logprob_max_;       // F32 [S]: L_max of the raw logits (item 4), between ops
  Allocation logprob_mass_;      // I64 [S]: Z, between ops
  Allocation penalty_original_;  // F32 [max(max_penalty_entries, 1)]: raw logits of penalized entries
  // The token-mask buffer (runner/token_mask.h), W = ceil(V / 32): all ones but constrained rows.
  Allocation mask_;          // device: I32 [S, W], one address for every graph
  Allocation mask_mirror_;   // host (pinned on GPUs): I32 [S * W], the same bytes
  // The host's publication of a step's rows (TokenMaskUpload), pinned on GPUs: I32 [1 + S], word 0
  // the publications so far, then the changed flags of the S rows.
  Allocation mask_signal_;
  Allocation mask_waited_;  // device: I32 [1 + S], the publications steps waited for, then the backend's
  uint32_t mask_published_ = 0;
  TokenMaskRows mask_rows_{0, 1};
  PenaltyListBuilder penalty_builder_;
  std::map<std::tuple<int64_t, int64_t, bool>, Captured> graphs_;
  std::set<std::string> logged_;
  std::function<void(const StepLayout&, void*)> staging_hook_;
  std::function<void(const StepLayout&, int32_t*)> mask_staging_hook_;
  RunnerStats stats_;
};

}  // namespace fg
