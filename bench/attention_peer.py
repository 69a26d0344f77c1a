#!/usr/bin/env python3
"""bench/attention_peer.py — the live peer of `fullgraph bench attention`: PyTorch's FlashAttention
(torch.ops.aten._flash_attention_forward) on the same shapes, printed in the same table.

Shapes: Llama-3.1-8B attention, 32 query heads, 8 KV heads (GQA 4), head dim 128, bf16.
  decode:  batch 1, 8, 64 x context 512 .. 32k. PyTorch has no paged-KV path, so the peer runs
           FlashAttention on contiguous K and V [batch, context, 8, 128] with one query token per
           request (not causal: the token sees its whole context). That is the closest peer: the
           same KV bytes, without the block-table gather of a paged cache.
           GB/s = batch * context * 8 * 128 * 2 B * 2 (K and V) / time.
  prefill: causal, q [batch, S, 32, 128], K/V [batch, S, 8, 128], batch = 16384 / S.
           TFLOP/s = 2 * batch * 32 * S^2 * 128 / time (the causal half of 4 S^2 D H).
Timing: a CUDA graph of several calls (rotating over K/V sets so repeated calls do not measure the
L2 cache), CUDA events, warm-up, median of replays divided by the calls, as the C++ side does.
If the graph cannot be captured, the same loop is timed eagerly (and the row says so).

Usage (on the GPU machine): python3 bench/attention_peer.py [--json peer.json]
"""
import argparse
import json
import math
import statistics

import torch

H, HKV, D = 32, 8, 128
ROTATE_BYTES = 256 * 1024 * 1024
SET_BUDGET_BYTES = 12 * 1024**3  # K/V sets never take more than this


EXPAND_KV = False  # set by probe_gqa() when this torch build rejects fewer KV heads than q heads


def flash(q, k, v, causal):
    # aten::_flash_attention_forward(query, key, value, cum_seq_q, cum_seq_k, max_q, max_k,
    #                                dropout_p, is_causal, return_debug_mask, ...); the default
    # softmax scale is 1/sqrt(head_dim), as in fullgraph's benchmark.
    if EXPAND_KV:
        k = k.repeat_interleave(H // HKV, dim=2)
        v = v.repeat_interleave(H // HKV, dim=2)
    return torch.ops.aten._flash_attention_forward(q, k, v, None, None, q.shape[1], k.shape[1], 0.0, causal,
                                                   False)[0]


def probe_gqa():
    """FlashAttention-2 takes GQA natively; if this build does not, KV heads are expanded (then the
    peer reads 4x the KV bytes while GB/s still counts the 8-head bytes: it is said in the header)."""
    global EXPAND_KV
    q = torch.randn(1, 4, H, D, device="cuda", dtype=torch.bfloat16)
    kv = torch.randn(1, 4, HKV, D, device="cuda", dtype=torch.bfloat16)
    try:
        flash(q, kv, kv, True)
        torch.cuda.synchronize()
    except RuntimeError as error:
        EXPAND_KV = True
        print(f"note: GQA rejected ({error}); KV heads expanded to {H} (4x the KV bytes read)")


def time_calls(calls, runs, reps=30):
    """Median microseconds per call of `runs` calls, from graph replays (or eager loops)."""
    mode = "graph"
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(runs):
            calls(i)  # warm-up before capture, as CUDA graphs require
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            for i in range(runs):
                calls(i)
        launch = graph.replay
    except Exception as error:  # noqa: BLE001 - any capture failure falls back to eager timing
        mode = f"eager ({type(error).__name__})"
        torch.cuda.synchronize()

        def launch():
            for i in range(runs):
                calls(i)

    for _ in range(3):
        launch()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        launch()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times) * 1000.0 / runs, mode


def decode_case(batch, context):
    kv_bytes = batch * context * HKV * D * 2 * 2
    sets = max(1, min(math.ceil(ROTATE_BYTES / kv_bytes), SET_BUDGET_BYTES // kv_bytes))
    runs = min(64, max(8, sets))
    q = torch.randn(batch, 1, H, D, device="cuda", dtype=torch.bfloat16)
    ks = [torch.randn(batch, context, HKV, D, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
    vs = [torch.randn(batch, context, HKV, D, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
    us, mode = time_calls(lambda i: flash(q, ks[i % sets], vs[i % sets], False), runs)
    del ks, vs
    torch.cuda.empty_cache()
    return us, kv_bytes / (us * 1e-6) / 1e9, mode


def prefill_case(seq):
    batch = max(1, 16384 // seq)
    q = torch.randn(batch, seq, H, D, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(batch, seq, HKV, D, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(batch, seq, HKV, D, device="cuda", dtype=torch.bfloat16)
    us, mode = time_calls(lambda i: flash(q, k, v, True), 3, reps=10)
    return batch, us, 2.0 * batch * H * seq * seq * D / (us * 1e-6) / 1e12, mode


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default="", help="write the numbers here too")
    args = parser.parse_args()
    torch.manual_seed(0)
    probe_gqa()
    name = torch.cuda.get_device_name()
    print(f"attention peer on {name}: torch {torch.__version__}, aten._flash_attention_forward, "
          f"32 q heads, 8 KV heads, hd 128, bf16 (decode on contiguous KV)")
    print(f"{'backend':<9} {'kind':<8} {'batch':>6} {'len':>8} {'us/run':>11} {'GB/s':>9} {'TFLOP/s':>9}  timing")
    rows = []

    def emit(kind, batch, length, us, gbps, tflops, mode):
        print(f"{'torch-fa':<9} {kind:<8} {batch:>6} {length:>8} {us:>11.2f} {gbps:>9.1f} {tflops:>9.1f}  {mode}")
        rows.append(dict(backend="torch-fa", kind=kind, batch=batch, length=length, us=us, gbps=gbps,
                         tflops=tflops, timing=mode))

    for batch in (1, 8, 64):
        for context in (512, 1024, 4096, 8192, 16384, 32768):
            us, gbps, mode = decode_case(batch, context)
            emit("decode", batch, context, us, gbps, 0.0, mode)
    for seq in (512, 1024, 2048, 4096, 8192):
        batch, us, tflops, mode = prefill_case(seq)
        emit("prefill", batch, seq, us, 0.0, tflops, mode)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=name, torch=torch.__version__, results=rows), f, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
