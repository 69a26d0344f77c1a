// bench/attention/attention_bench.h — `fullgraph bench attention`: paged decode attention bandwidth
// and causal prefill attention throughput of the GPU attention backends, on the Llama-3.1-8B
// attention shape (32 query heads, 8 KV heads, head dim 128, KV block 16). bench/attention_peer.py
// measures PyTorch's FlashAttention on the same shapes and prints the same table.
#pragma once

#include <string>
#include <vector>

namespace fg::bench {

// Which cases run_attention_benchmarks measures.
struct AttentionBenchKinds {
  bool decode = true;   // decode, batch 1 .. 64, contexts 512 .. 32k, for each of decode_backends
  bool prefill = true;  // flash causal prefill, 512 .. 8192 tokens
  std::vector<std::string> decode_backends = {"split_kv", "flash", "auto"};  // in this order
};

// Runs the chosen cases, prints a table and, when json_out is not empty, writes the numbers there.
// Returns 0 on success (errors raise fg::Error). Needs a GPU with ~10 GiB free.
int run_attention_benchmarks(const std::string& json_out, AttentionBenchKinds kinds = {});

}  // namespace fg::bench
