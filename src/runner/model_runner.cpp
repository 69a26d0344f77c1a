// runner/model_runner.cpp — staging, the dispatcher, capture and replay.
#include "runner/model_runner.h"

#include <fmt/format.h>

#include "core/log.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <limits>

namespace fg {

ModelRunner::ModelRunner(LlamaModel& model, const KvCache& kv, RunnerOptions options,
                         std::function<void(const std::string&)> log)
    : model_(model),
      backend_(model.backend()),
      kv_(kv),
      options_(std::move(options)),
      log_(log ? std::move(log) : log::info_line),
      buckets_(options_.capture_sizes.empty() ? default_capture_sizes(options_.max_num_tokens) : options_.capture_sizes,
               options_.max_num_seqs) {
  const ModelConfig& c = model.config();
  FG_CHECK(options_.max_num_tokens >= 1 && options_.max_num_seqs >= 1 && options_.max_num_seqs <= options_.max_num_tokens,
           "runner: need 1 <= max_num_seqs ({}) <= max_num_tokens ({})", options_.max_num_seqs, options_.max_num_tokens);
  FG_CHECK(model.max_tokens() >= options_.max_num_tokens && model.max_logits() >= options_.max_num_seqs,
           "runner: the model's buffers ({} tokens, {} logits rows) are smaller than the runner's limits ({}, {})",
           model.max_tokens(), model.max_logits(), options_.max_num_tokens, options_.max_num_seqs);
  FG_CHECK(options_.max_penalty_entries >= 0 && options_.max_penalty_entries <= std::numeric_limits<int32_t>::max(),
           "runner: max_penalty_entries = {} must be in [0, 2^31)", options_.max_penalty_entries);
  for (int64_t s : buckets_.capture_sizes())
    FG_CHECK(s <= options_.max_num_tokens, "runner: capture size {} exceeds the token budget {}", s,
             options_.max_num_tokens);
  backend_.set_capture_sizes(buckets_.capture_sizes());
  const int64_t max_model_len = options_.max_model_len > 0 ? options_.max_model_len : c.max_position_embeddings;
  FG_CHECK(max_model_len <= c.max_position_embeddings, "runner: max_model_len {} exceeds the model's context {}",
           max_model_len, c.max_position_embeddings);
  max_blocks_per_seq_ = (max_model_len + kv.block_size - 1) / kv.block_size;
  limits_ = {c.vocab_size, max_model_len, kv.num_blocks, kv.block_size};

  const StepLayout largest = StepLayout::make(options_.max_num_tokens, options_.max_num_seqs, max_blocks_per_seq_,
                                              options_.max_penalty_entries);
  staging_ = backend_.allocate_staging(largest.total_bytes);
  arena_ = backend_.allocate(DType::kI32, {static_cast<int64_t>(largest.total_bytes / 4)});
  const int64_t S = options_.max_num_seqs;
  outputs_ = backend_.allocate(DType::kI32, {2 * S + 2 * S * kMaxLogprobs});
  logprob_max_ = backend_.allocate(DType::kF32, {S});
  logprob_mass_ = backend_.allocate(DType::kI64, {S});
  penalty_original_ = backend_.allocate(DType::kF32, {std::max<int64_t>(options_.max_penalty_entries, 1)});
  // The token-mask buffer starts all ones, as its mirror; the copy ends before any step stages.
  const int64_t W = token_mask_words(c.vocab_size);
  mask_ = backend_.allocate(DType::kI32, {S, W});
  mask_mirror_ = backend_.allocate_staging(static_cast<size_t>(S * W) * 4);
  std::fill_n(mask_mirror_.tensor.as<int32_t>(), S * W, int32_t{-1});
  backend_.copy_from_host(mask_.tensor, mask_mirror_.tensor.data);
  mask_signal_ = backend_.allocate_staging(static_cast<size_t>(1 + S) * 4);
  std::fill_n(mask_signal_.tensor.as<int32_t>(), 1 + S, int32_t{0});
  mask_waited_ = backend_.allocate(DType::kI32, {1 + S});
  const std::vector<int32_t> zeros(static_cast<size_t>(1 + S), 0);
  backend_.copy_from_host(mask_waited_.tensor, zeros.data());
  backend_.synchronize();
  mask_rows_ = TokenMaskRows(S, W);
}

StepLayout ModelRunner::layout_for(int64_t num_tokens, int64_t num_reqs) const {
  return StepLayout::make(num_tokens, num_reqs, max_blocks_per_seq_, options_.max_penalty_entries, -1,
                          mask_rows_.words());
}

Tensor ModelRunner::sampled_ids(int64_t rows) const { return outputs_.tensor.rows(0, rows); }

LogprobTensors ModelRunner::logprob_outputs(int64_t rows) const {
  const int64_t S = options_.max_num_seqs;
  int32_t* words = outputs_.tensor.as<int32_t>();
  const Device device = backend_.device();
  LogprobTensors out;
  out.logit_max = logprob_max_.tensor.rows(0, rows);
  out.mass = logprob_mass_.tensor.rows(0, rows);
  out.sampled = Tensor(words + S, DType::kF32, {rows}, device);
  out.top_ids = Tensor(words + 2 * S, DType::kI32, {rows, kMaxLogprobs}, device);
  out.top_logprobs = Tensor(words + 2 * S + S * kMaxLogprobs, DType::kF32, {rows, kMaxLogprobs}, device);
  return out;
}

void ModelRunner::poison_step_buffers() {
  const std::vector<uint8_t> bytes(arena_.tensor.nbytes(), 0xFF);
  std::copy(bytes.begin(), bytes.begin() + std::min(bytes.size(), staging_.tensor.nbytes()),
            static_cast<uint8_t*>(staging_.tensor.data));
  backend_.copy_from_host(arena_.tensor, bytes.data());
  // And the step's outputs and the scratch between its sampling ops.
  for (const Allocation* a : {&outputs_, &logprob_max_, &logprob_mass_, &penalty_original_}) {
    const std::vector<uint8_t> poison(a->tensor.nbytes(), 0xFF);
    backend_.copy_from_host(a->tensor, poison.data());
  }
  backend_.synchronize();
}

void ModelRunner::log_once(const std::string& reason) {
  // Once per kind of reason: the sizes in it vary from step to step.
  std::string kind = reason;
  std::erase_if(kind, [](char c) { return c >= '0' && c <= '9'; });
  if (logged_.insert(kind).second) log_("eager step: " + reason + " (logged once per kind)");
}

StagedStep ModelRunner::upload(const std::vector<ScheduledRequest>& requests, const StepLayout& layout,
                               bool padded_graph_step, bool with_masks) {
  void* staging = staging_.tensor.data;
  const StagedStep staged =
      stage_step(requests, layout, backend_.attention_contract(), kv_.block_size, staging, &penalty_builder_);
  if (padded_graph_step && staging_hook_) staging_hook_(layout, staging);
  if (with_masks) stage_masks(requests, layout, padded_graph_step);
  if (options_.check_graph_inputs && !requests.empty()) {
    FG_CHECK(with_masks, "runner: checked mode checks the masks with the step, so they must be staged with it");
    const StepShape shape = step_shape(requests);
    TokenMaskCheck mask{mask_mirror_.tensor.as<int32_t>(), {}};
    for (int64_t r = 0; r < shape.num_reqs; ++r) mask.constrained.push_back(mask_rows_.constrained(r));
    try {
      check_step_inputs(layout, staging, shape.num_tokens, shape.num_reqs, shape.uniform_decode,
                        backend_.attention_contract(), limits_, &mask);
    } catch (...) {
      mask_rows_.forget();  // the mirror changed and the device did not: the next step rewrites every row
      throw;
    }
  }
  if (with_masks) publish_masks();
  // One copy: the fixed fields and the penalty entries in use (the lists come last).
  backend_.copy_from_host(arena_.tensor.rows(0, static_cast<int64_t>(staged.copy_bytes / 4)), staging);
  return staged;
}

void ModelRunner::stage_masks(const std::vector<ScheduledRequest>& requests, const StepLayout& layout,
                              bool padded_graph_step) {
  int32_t* mirror = mask_mirror_.tensor.as<int32_t>();
  const std::vector<TokenMaskRows::Run> runs = mask_rows_.stage(requests, mirror);
  if (padded_graph_step && mask_staging_hook_) mask_staging_hook_(layout, mirror);
  int32_t* changed = mask_signal_.tensor.as<int32_t>() + 1;
  std::fill_n(changed, mask_rows_.rows(), int32_t{0});
  for (const TokenMaskRows::Run& run : runs) {
    std::fill_n(changed + run.first, run.count, int32_t{1});
    stats_.mask_bytes_copied += run.count * mask_rows_.words() * 4;
    ++stats_.mask_copies;
  }
}

void ModelRunner::publish_masks() {
  // Release: the rows and flags written before are visible to whoever sees the new count.
  std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(mask_signal_.tensor.data))
      .store(++mask_published_, std::memory_order_release);
}

void ModelRunner::publish_masks_late(const std::vector<ScheduledRequest>& requests, const StepLayout& layout,
                                     bool padded_graph_step, const std::function<void()>& fill_masks) {
  try {
    if (fill_masks) fill_masks();
    stage_masks(requests, layout, padded_graph_step);
  } catch (...) {
    std::fill_n(mask_signal_.tensor.as<int32_t>() + 1, mask_rows_.rows(), int32_t{0});
    publish_masks();
    backend_.synchronize();
    mask_rows_.forget();
    throw;
  }
  publish_masks();
}

void ModelRunner::enqueue_step(const StepLayout& layout, int64_t uniform_query_len) {
  void* arena = arena_.tensor.data;
  const Device device = backend_.device();
  StepViews views = layout.views(arena, device, mask_.tensor.data);
  views.inputs.attention.uniform_query_len = uniform_query_len;
  const Tensor logits = model_.forward(views.inputs, kv_);
  // The token mask first: -inf over the tokens a constrained request's grammar does not allow, so
  // that everything after reads the masked logits as the raw ones. Logprobs are of the raw logits,
  // sampling is of the biased and penalized ones: the statistics and the top n first, then the
  // logit biases and penalties in place (keeping each entry's raw value), then the draw, then the
  // sampled token's raw logprob from the kept values. See sampling_params.h.
  TokenMaskUpload upload;
  upload.mirror = mask_mirror_.tensor.as<const int32_t>();
  upload.changed = mask_signal_.tensor.as<const int32_t>() + 1;
  upload.published = static_cast<const uint32_t*>(mask_signal_.tensor.data);
  upload.waited = mask_waited_.tensor;
  backend_.upload_token_mask(mask_.tensor, upload);
  backend_.apply_token_mask(logits, views.token_mask);
  const SamplingTensors& params = views.sampling;
  PenaltyTensors& penalties = views.penalties;
  penalties.original = penalty_original_.tensor.rows(0, layout.penalty_capacity);
  const LogprobTensors logprobs = logprob_outputs(layout.num_reqs);
  const Tensor ids = sampled_ids(layout.num_reqs);
  backend_.raw_logprobs(logits, params, logprobs);
  backend_.apply_penalties(logits, params, penalties);
  backend_.sample(logits, params, ids);
  backend_.sampled_logprobs(logits, ids, params, penalties, logprobs);
}

StepResult ModelRunner::read_results(const std::vector<ScheduledRequest>& requests, const StagedStep& staged) {
  const int64_t n = static_cast<int64_t>(requests.size());
  StepResult result;
  result.sampled.resize(static_cast<size_t>(n));
  if (!staged.any_logprobs) {
    backend_.copy_to_host(result.sampled.data(), sampled_ids(n));
    return result;
  }
  const std::vector<int32_t> host = copy_outputs(n);
  std::copy_n(host.begin(), n, result.sampled.begin());
  std::vector<int32_t> wanted;
  for (const ScheduledRequest& r : requests) wanted.push_back(r.sampling.num_logprobs);
  result.logprobs = logprobs_of(host, wanted);
  return result;
}

std::vector<int32_t> ModelRunner::copy_outputs(int64_t n) {
  const int64_t S = options_.max_num_seqs, words = 2 * S + S * kMaxLogprobs + n * kMaxLogprobs;
  std::vector<int32_t> host(static_cast<size_t>(words));
  backend_.copy_to_host(host.data(), outputs_.tensor.rows(0, words));
  return host;
}

std::vector<TokenLogprobs> ModelRunner::logprobs_of(const std::vector<int32_t>& outputs,
                                                    const std::vector<int32_t>& wanted) const {
  const int64_t S = options_.max_num_seqs;
  const float* sampled_logprob = reinterpret_cast<const float*>(outputs.data() + S);
  const int32_t* top_ids = outputs.data() + 2 * S;
  const float* top_logprobs = reinterpret_cast<const float*>(outputs.data() + 2 * S + S * kMaxLogprobs);
  std::vector<TokenLogprobs> logprobs(wanted.size());
  for (size_t r = 0; r < wanted.size(); ++r) {
    if (wanted[r] < 0) continue;
    TokenLogprobs& lp = logprobs[r];
    lp.logprob = sampled_logprob[r];
    const int64_t count = std::min<int64_t>(wanted[r], limits_.vocab_size);
    for (int64_t k = 0; k < count; ++k)
      lp.top.emplace_back(top_ids[r * kMaxLogprobs + k], top_logprobs[r * kMaxLogprobs + k]);
  }
  return logprobs;
}

std::string ModelRunner::graph_refusal(const StepShape& shape, Bucket* bucket) const {
  if (options_.enforce_eager) return "graphs are disabled (--enforce-eager)";
  const GraphSupport support = backend_.attention_graph_support();
  if (support == GraphSupport::kNever) return "the attention backend supports no graphs";
  if (support == GraphSupport::kUniformDecode && !shape.uniform_decode)
    return "a mixed prefill+decode batch, and the attention backend captures uniform-decode batches only";
  const bool want_uniform = options_.prefer_uniform_decode || support == GraphSupport::kUniformDecode;
  const auto found = buckets_.find(shape.num_tokens, shape.num_reqs, shape.uniform_decode, want_uniform);
  if (!found)
    return fmt::format("{} tokens over {} requests exceed the largest bucket", shape.num_tokens, shape.num_reqs);
  if (support == GraphSupport::kUniformDecode && !found->uniform_decode)
    return fmt::format("no uniform-decode bucket holds {} requests", shape.num_reqs);
  if (!graphs_.count({found->num_tokens, found->num_reqs, found->uniform_decode}))
    return "no graph captured for bucket " + found->to_string();
  *bucket = *found;
  return "";
}

int64_t ModelRunner::eager_uniform_query_len(const StepShape& shape) const {
  if (!shape.uniform_decode) return 0;
  // Only a backend that captures mixed batches can see a uniform batch in a mixed bucket.
  if (backend_.attention_graph_support() != GraphSupport::kAlways) return 1;
  return buckets_.decodes_as_uniform(shape.num_reqs, options_.prefer_uniform_decode) ? 1 : 0;
}

StepResult ModelRunner::execute(const std::vector<ScheduledRequest>& requests,
                                const std::function<void()>& fill_masks) {
  const StepShape shape = step_shape(requests);
  FG_CHECK(shape.num_reqs >= 1, "runner: a step needs at least one request");
  FG_CHECK(shape.num_tokens <= options_.max_num_tokens && shape.num_reqs <= options_.max_num_seqs,
           "runner: a step of {} tokens over {} requests exceeds the limits ({} tokens, {} requests)", shape.num_tokens,
           shape.num_reqs, options_.max_num_tokens, options_.max_num_seqs);
  Bucket bucket;
  const std::string refusal = graph_refusal(shape, &bucket);
  if (!refusal.empty()) {
    log_once(refusal);
    return execute_eager(requests, fill_masks);
  }
  Captured& captured = graphs_.at({bucket.num_tokens, bucket.num_reqs, bucket.uniform_decode});
  const bool late = masks_after_launch();
  if (!late && fill_masks) fill_masks();
  const StagedStep staged = upload(requests, captured.layout, /*padded_graph_step=*/true, /*with_masks=*/!late);
  captured.graph->replay();
  if (late) publish_masks_late(requests, captured.layout, /*padded_graph_step=*/true, fill_masks);
  ++stats_.graph_steps;
  StepResult result = read_results(requests, staged);
  result.replayed = true;
  result.bucket = bucket;
  return result;
}

StepResult ModelRunner::execute_eager(const std::vector<ScheduledRequest>& requests,
                                      const std::function<void()>& fill_masks) {
  const StepShape shape = step_shape(requests);
  FG_CHECK(shape.num_reqs >= 1 && shape.num_tokens <= options_.max_num_tokens &&
               shape.num_reqs <= options_.max_num_seqs,
           "runner: a step of {} tokens over {} requests does not fit the limits ({}, {})", shape.num_tokens,
           shape.num_reqs, options_.max_num_tokens, options_.max_num_seqs);
  const StepLayout layout = layout_for(shape.num_tokens, shape.num_reqs);
  const bool late = masks_after_launch();
  if (!late && fill_masks) fill_masks();
  const StagedStep staged = upload(requests, layout, /*padded_graph_step=*/false, /*with_masks=*/!late);
  enqueue_step(layout, eager_uniform_query_len(shape));
  if (late) publish_masks_late(requests, layout, /*padded_graph_step=*/false, fill_masks);
  ++stats_.eager_steps;
  StepResult result = read_results(requests, staged);
  result.replayed = false;
  result.bucket = Bucket{shape.num_tokens, shape.num_reqs, shape.uniform_decode};
  return result;
}

void ModelRunner::capture_graphs(const std::function<void(size_t, size_t)>& on_progress) {
  if (options_.enforce_eager) {
    log_("graphs disabled (--enforce-eager): every step runs eagerly");
    return;
  }
  const GraphSupport support = backend_.attention_graph_support();
  FG_CHECK(backend_.supports_graphs(), "the {} backend cannot capture graphs; run with --enforce-eager",
           backend_.name());
  const bool uniform = support != GraphSupport::kNever &&
                       (options_.prefer_uniform_decode || support == GraphSupport::kUniformDecode);
  const std::vector<Bucket> todo = buckets_.all_largest_first(support == GraphSupport::kAlways, uniform);
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < todo.size(); ++i) {
    const Bucket& b = todo[i];
    Captured captured{layout_for(b.num_tokens, b.num_reqs), nullptr};
    // Warm-up: one eager run of the bucket over an all-padding step (it writes no KV), so that
    // lazily loaded kernels and library handles exist before capture.
    const int64_t uniform_query_len = b.uniform_decode ? 1 : 0;
    upload({}, captured.layout, false, /*with_masks=*/true);
    enqueue_step(captured.layout, uniform_query_len);
    backend_.synchronize();
    backend_.begin_capture();
    enqueue_step(captured.layout, uniform_query_len);
    captured.graph = backend_.end_capture();
    graphs_[{b.num_tokens, b.num_reqs, b.uniform_decode}] = std::move(captured);
    if (on_progress) on_progress(i + 1, todo.size());
  }
  backend_.synchronize();
  stats_.graphs = graphs_.size();
  stats_.capture_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats_.graph_memory_bytes = backend_.graph_memory_bytes();
  log_(fmt::format("captured {} graphs ({} attention graphs: {}) in {:.2f} s; graphs hold {:.1f} MiB, step buffers "
                   "{:.1f} KiB, token masks {:.1f} KiB",
                   graphs_.size(), backend_.name(), graph_support_name(support), stats_.capture_seconds,
                   static_cast<double>(stats_.graph_memory_bytes) / (1 << 20),
                   static_cast<double>(arena_.tensor.nbytes()) / 1024,
                   static_cast<double>(mask_.tensor.nbytes()) / 1024));
}

}  // namespace fg
