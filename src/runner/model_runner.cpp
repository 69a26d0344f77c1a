// runner/model_runner.cpp — staging, the dispatcher, capture and replay.
#include "runner/model_runner.h"

#include <fmt/format.h>

#include <chrono>
#include <algorithm>
#include <cstdio>

namespace fg {

ModelRunner::ModelRunner(LlamaModel& model, const KvCache& kv, RunnerOptions options,
                         std::function<void(const std::string&)> log)
    : model_(model),
      backend_(model.backend()),
      kv_(kv),
      options_(std::move(options)),
      log_(log ? std::move(log) : [](const std::string& line) { fmt::print(stderr, "fullgraph: {}\n", line); }),
      buckets_(options_.capture_sizes.empty() ? default_capture_sizes(options_.max_num_tokens) : options_.capture_sizes,
               options_.max_num_seqs) {
  const ModelConfig& c = model.config();
  FG_CHECK(options_.max_num_tokens >= 1 && options_.max_num_seqs >= 1 && options_.max_num_seqs <= options_.max_num_tokens,
           "runner: need 1 <= max_num_seqs ({}) <= max_num_tokens ({})", options_.max_num_seqs, options_.max_num_tokens);
  FG_CHECK(model.max_tokens() >= options_.max_num_tokens && model.max_logits() >= options_.max_num_seqs,
           "runner: the model's buffers ({} tokens, {} logits rows) are smaller than the runner's limits ({}, {})",
           model.max_tokens(), model.max_logits(), options_.max_num_tokens, options_.max_num_seqs);
  for (int64_t s : buckets_.capture_sizes())
    FG_CHECK(s <= options_.max_num_tokens, "runner: capture size {} exceeds the token budget {}", s,
             options_.max_num_tokens);
  backend_.set_capture_sizes(buckets_.capture_sizes());
  max_blocks_per_seq_ = (c.max_position_embeddings + kv.block_size - 1) / kv.block_size;
  limits_ = {c.vocab_size, c.max_position_embeddings, kv.num_blocks, kv.block_size};

  const StepLayout largest = StepLayout::make(options_.max_num_tokens, options_.max_num_seqs, max_blocks_per_seq_);
  staging_ = backend_.allocate_staging(largest.total_bytes);
  arena_ = backend_.allocate(DType::kI32, {static_cast<int64_t>(largest.total_bytes / 4)});
  sampled_ = backend_.allocate(DType::kI32, {options_.max_num_seqs});
}

void ModelRunner::poison_step_buffers() {
  const std::vector<uint8_t> bytes(arena_.tensor.nbytes(), 0xFF);
  std::copy(bytes.begin(), bytes.begin() + std::min(bytes.size(), staging_.tensor.nbytes()),
            static_cast<uint8_t*>(staging_.tensor.data));
  backend_.copy_from_host(arena_.tensor, bytes.data());
  backend_.synchronize();
}

void ModelRunner::log_once(const std::string& reason) {
  if (logged_.insert(reason).second) log_("eager step: " + reason + " (logged once)");
}

void ModelRunner::upload(const std::vector<ScheduledRequest>& requests, const StepLayout& layout,
                         bool padded_graph_step) {
  void* staging = staging_.tensor.data;
  stage_step(requests, layout, backend_.attention_contract(), kv_.block_size, staging);
  if (padded_graph_step && staging_hook_) staging_hook_(layout, staging);
  if (options_.check_graph_inputs && !requests.empty()) {
    const StepShape shape = step_shape(requests);
    check_step_inputs(layout, staging, shape.num_tokens, shape.num_reqs, shape.uniform_decode,
                      backend_.attention_contract(), limits_);
  }
  backend_.copy_from_host(arena_.tensor.rows(0, static_cast<int64_t>(layout.total_bytes / 4)), staging);
}

void ModelRunner::enqueue_step(const StepLayout& layout, int64_t uniform_query_len) {
  StepInputs inputs = layout.inputs(arena_.tensor.data, backend_.device());
  inputs.attention.uniform_query_len = uniform_query_len;
  const Tensor logits = model_.forward(inputs, kv_);
  backend_.sample(logits, layout.sampling(arena_.tensor.data, backend_.device()),
                  sampled_.tensor.rows(0, layout.num_reqs));
}

std::vector<int32_t> ModelRunner::read_sampled(int64_t num_reqs) {
  std::vector<int32_t> ids(static_cast<size_t>(num_reqs));
  backend_.copy_to_host(ids.data(), sampled_.tensor.rows(0, num_reqs));
  return ids;
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

StepResult ModelRunner::execute(const std::vector<ScheduledRequest>& requests) {
  const StepShape shape = step_shape(requests);
  FG_CHECK(shape.num_reqs >= 1, "runner: a step needs at least one request");
  FG_CHECK(shape.num_tokens <= options_.max_num_tokens && shape.num_reqs <= options_.max_num_seqs,
           "runner: a step of {} tokens over {} requests exceeds the limits ({} tokens, {} requests)", shape.num_tokens,
           shape.num_reqs, options_.max_num_tokens, options_.max_num_seqs);
  Bucket bucket;
  const std::string refusal = graph_refusal(shape, &bucket);
  if (!refusal.empty()) {
    log_once(refusal);
    return execute_eager(requests);
  }
  Captured& captured = graphs_.at({bucket.num_tokens, bucket.num_reqs, bucket.uniform_decode});
  upload(requests, captured.layout, /*padded_graph_step=*/true);
  captured.graph->replay();
  ++stats_.graph_steps;
  return {read_sampled(shape.num_reqs), true, bucket};
}

StepResult ModelRunner::execute_eager(const std::vector<ScheduledRequest>& requests) {
  const StepShape shape = step_shape(requests);
  FG_CHECK(shape.num_reqs >= 1 && shape.num_tokens <= options_.max_num_tokens &&
               shape.num_reqs <= options_.max_num_seqs,
           "runner: a step of {} tokens over {} requests does not fit the limits ({}, {})", shape.num_tokens,
           shape.num_reqs, options_.max_num_tokens, options_.max_num_seqs);
  const StepLayout layout = StepLayout::make(shape.num_tokens, shape.num_reqs, max_blocks_per_seq_);
  upload(requests, layout, /*padded_graph_step=*/false);
  enqueue_step(layout, shape.uniform_decode ? 1 : 0);
  ++stats_.eager_steps;
  return {read_sampled(shape.num_reqs), false, Bucket{shape.num_tokens, shape.num_reqs, shape.uniform_decode}};
}

void ModelRunner::capture_graphs(bool show_progress) {
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
    Captured captured{StepLayout::make(b.num_tokens, b.num_reqs, max_blocks_per_seq_), nullptr};
    // Warm-up: one eager run of the bucket over an all-padding step (it writes no KV), so that
    // lazily loaded kernels and library handles exist before capture.
    const int64_t uniform_query_len = b.uniform_decode ? 1 : 0;
    upload({}, captured.layout, false);
    enqueue_step(captured.layout, uniform_query_len);
    backend_.synchronize();
    backend_.begin_capture();
    enqueue_step(captured.layout, uniform_query_len);
    captured.graph = backend_.end_capture();
    graphs_[{b.num_tokens, b.num_reqs, b.uniform_decode}] = std::move(captured);
    if (show_progress) {
      const int width = 30, filled = static_cast<int>(width * (i + 1) / todo.size());
      fmt::print(stderr, "\rcapturing graphs [{}{}] {}/{} {}", std::string(filled, '#'), std::string(width - filled, ' '),
                 i + 1, todo.size(), i + 1 == todo.size() ? "\n" : "");
    }
  }
  backend_.synchronize();
  stats_.graphs = graphs_.size();
  stats_.capture_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats_.graph_memory_bytes = backend_.graph_memory_bytes();
  log_(fmt::format("captured {} graphs ({} attention graphs: {}) in {:.2f} s; graphs hold {:.1f} MiB, step buffers "
                   "{:.1f} KiB",
                   graphs_.size(), backend_.name(), graph_support_name(support), stats_.capture_seconds,
                   static_cast<double>(stats_.graph_memory_bytes) / (1 << 20),
                   static_cast<double>(arena_.tensor.nbytes()) / 1024));
}

}  // namespace fg
