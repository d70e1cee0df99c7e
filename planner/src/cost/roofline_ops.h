// The training step's operation classes (roofline.cc), one row each: the term's name and its
// formula, built from the constants the roofline computes with (issue 47 item 4), which live
// here so that the formula text and the code read the same numbers. Internal to the cost model.
#pragma once

#include <cstdio>
#include <iterator>
#include <string>

#include "cost/roofline.h"

namespace muonplan::roofline_ops {

enum OpClass {
  gemm,
  expert_gemm,
  adapter_gemm,
  attention,
  elementwise,
  moe_routing,
  lm_head,
  lm_head_loss,
  layer_fixed,
  lora_wrapper,
  expert_loop,
  fsdp_copies,
  kClasses
};

// A number of the model as its formula text prints it: 2.5, 48.
inline std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Causal attention's backward FLOPs per forward FLOP (FlashAttention's 5 GEMMs to 2, the
// recompute of the scores included); the class's FLOPs count forward and backward, 3.5x.
inline constexpr double kAttnBackwardFlops = 2.5;

// routing_bytes_per_token's terms (roofline.cc): bytes per expert, per choice, per element of
// each routed copy (k h), per element of h.
inline constexpr double kRouterBytesPerExpert = 2 + 4 + 4 + 4 + 4;  // upcast, softmax, top-k's read
inline constexpr double kRoutingBytesPerChoice = 12 + 8 + 64;  // top-k's write, histogram, sort
inline constexpr double kRoutingBytesPerCopy =
    4 + 20 + 6;                                   // per element of k h: gather, score, scatter
inline constexpr double kRoutingZeroedBytes = 2;  // per element of h: the output zeroed

// Aten ops of the loop's body per expert (multi_moe.py, _forward_for_loop): forward 9 matmuls,
// 8 elementwise (3 x scale and add, SiLU, product), 19 views (the token slice, 9 expert selects,
// 9 transposes): 36. Backward 50: 15 matmuls (input grads of the 3 frozen base GEMMs, input and
// weight grads of the 6 adapter GEMMs), 6 elementwise, 6 transposes, 6 select backwards (zeros
// and copy: 12), the slice backward (2), 3 input-grad and 6 parameter-grad accumulations.
inline constexpr double kLoopOpsFwd = 36, kLoopOpsBwd = 50;

// Gradient clipping as prime-rl's trainers run it every step (grad_clip.cc, grad_clip_work):
// torch.nn.utils.get_total_norm's _foreach_norm reads each local gradient once, and
// clip_grads_with_norm_'s _foreach_mul_ reads and writes it: 3 gradient bytes per byte held.
inline constexpr double kClipGradPasses = 3;
// torch's foreach kernels (ATen/native/cuda/MultiTensorApply.cuh): a launch takes at most 110
// tensors of a list of depth 1 and 320 blocks of 65536 elements each.
inline constexpr double kForeachMaxTensors = 110, kForeachMaxBlocks = 320,
                        kForeachChunkElems = 65536;
// The norm's small ops between the two foreach passes: the per-tensor norms' stack, their norm,
// the coefficient's add and divide, the clamp.
inline constexpr double kClipScalarOps = 5;

// prime-rl's MultiLoRALinear (roofline.cc, lora_wrapper_passes).
inline constexpr double kWrapperLaunches =
    10;  // per pass: assert 2, stack 2, GEMMs 2, repeat 2, mul, add
// Its syncs that break torch.compile's graph, per call: the assert (its f-string message is not
// the `assert x, "msg"` form Dynamo rewrites to torch._assert_async, so the jump on a tensor ends
// the graph: _detect_and_normalize_assert_statement, torch/_dynamo/symbolic_convert.py) and
// repeat_interleave with tensor repeats (an output size known only on the device). prime-rl
// applies LoRA before compiling each decoder layer (trainer/model.py: LoRA, AC, compile, FSDP),
// and its trainer benchmark passes --model.compile, so the wrapper is inside the compiled region.
inline constexpr double kWrapperGraphBreaks = 2;
// Host time of one call of an AOTAutograd-compiled graph whose inputs require grad: 39.0 us
// (pytorch/pytorch#122029, March 2024: a one-op graph; 14.0 us without grad, the same op eager
// 5.6 us). After a break the stream, drained by the sync, waits for it: a lower bound, as a
// break inside a nested module may split the enclosing frames' graphs too.
inline constexpr double kCompiledGraphCallUs = 39;
// HBM bytes per token: per output of B, forward's scale and full-width add and backward's scale
// grad; per input of A, backward's input-grad add.
inline constexpr double kWrapperFwdBytes = 10, kWrapperBwdBytes = 4, kWrapperInputGradBytes = 6;

// FSDP2's copies on the default (compute) stream, per element (fsdp/_fully_shard/
// _fsdp_collectives.py, read at pytorch/pytorch 010ae4a8): foreach_all_gather_copy_out's
// split_with_sizes_copy, after the stream waits on the all-gather's event, reads the all-gather
// output and writes the unsharded bf16 parameters (2 + 2 B per gathered element);
// foreach_reduce's foreach_reduce_scatter_copy_in (_chunk_cat, widening to reduce_dtype
// natively), before the reduce-scatter stream waits on the compute stream, reads the bf16
// unsharded gradients and writes the reduce-scatter input (2 + reduce_dtype's bytes per trained
// element). The all-gather's own copy-in and the reduce-scatter's division and accumulation run
// on FSDP2's side streams and are not counted here. On one GPU FSDP2 skips the all-gather and
// wait_for_unshard (_fsdp_param_group.py at 002a76fb) copies the shard into the unsharded
// parameter on the compute stream instead: counted the same.
inline constexpr double kCopyOutBytes = 2 + 2, kCopyInReadBytes = 2;

// The fused (RL) head's passes over each token and vocab entry (prime-rl's lm_head.py,
// _SequenceChunkedLogProbEntropyFn, its ops eager): forward writes the bf16 logits (2), upcasts
// them (2 + 4), scales by 1/T (4 + 4), then the online logsumexp's amax (4), exp (4 + 4), sum
// (4), exp x logits (8 + 4) and sum (4): 48 B. Backward recomputes the logits (2), upcasts and
// scales (6 + 8), exp (4 + 4), x -grad (4 + 4), x 1/T (4 + 4), to bf16 (4 + 2): 46 B.
inline constexpr double kFusedFwdBytes = 48, kFusedBwdBytes = 46;
// The unfused (SFT) head's logits: bf16 written (2), read and upcast (2 + 4), the loss's fp32
// read (4), the fp32 gradient written (4) and read back as bf16 (4 + 2): 22 B, half each pass.
inline constexpr double kUnfusedBytes = 22;

// Each operation class: its term's name and formula, the formula built from the constants the
// code above uses (a row per class, in OpClass's order: the static_assert below checks it).
using Formula = std::string (*)(const RooflineShape& sh);
struct OpClassRow {
  OpClass id;
  const char* name;
  Formula formula;
};
inline constexpr OpClassRow kOpClasses[] = {
    {gemm, "gemm",
     [](const RooflineShape&) -> std::string {
       return "dense GEMMs (qkv, o, gate/up, down, router, shared experts): forward [t, in] x "
              "[in, out], backward input and weight grads; max(2 m n k / (peak x "
              "training_gemm_efficiency x wave x k eff), bytes / HBM)";
     }},
    {expert_gemm, "expert_gemm",
     [](const RooflineShape&) -> std::string {
       return "routed experts' grouped GEMMs, t x top_k x ep / E tokens per local expert";
     }},
    {adapter_gemm, "adapter_gemm",
     [](const RooflineShape&) -> std::string {
       return "LoRA adapters A [r, in], B [out, r] (base weights frozen: no weight-grad GEMMs)";
     }},
    {attention, "attention",
     [](const RooflineShape&) {
       return "causal attention, S^2 heads (qk + v) per row forward, " + num(kAttnBackwardFlops) +
              "x backward";
     }},
    {elementwise, "elementwise",
     [](const RooflineShape&) -> std::string {
       return "norms, rotary, SwiGLU, residual adds: bf16 bytes / (hbm x hbm_efficiency)";
     }},
    {moe_routing, "moe_routing",
     [](const RooflineShape&) {
       return "MoE routing as torchtitan's moe.py runs it (ep 1 too): fp32 router scores and "
              "top-k, histogram and sort of the t x top_k choices, the padded permutation, the "
              "fp32 score multiply, the scatter-add un-permute: (" +
              num(kRouterBytesPerExpert) + " E + " + num(kRoutingBytesPerChoice) + " top_k + " +
              num(kRoutingBytesPerCopy) + " top_k h + " + num(kRoutingZeroedBytes) +
              " h) bytes per token forward, twice backward, / HBM";
     }},
    {lm_head, "lm_head",
     [](const RooflineShape&) -> std::string {
       return "LM head GEMMs per chunk: forward, input grad, weight grad (the fused head computes "
              "it even for a frozen head)";
     }},
    {lm_head_loss, "lm_head_loss",
     [](const RooflineShape&) {
       return "the loss over the logits: fused (RL) head, backward's recompute GEMM and the fp32 "
              "passes (" +
              num(kFusedFwdBytes) + " B forward, " + num(kFusedBwdBytes) +
              " B backward per token and vocab entry); unfused, " + num(kUnfusedBytes) +
              " B per entry";
     }},
    {layer_fixed, "layer_fixed",
     [](const RooflineShape&) -> std::string {
       return "per layer and pass: kernel launches x kernel_launch_us, FSDP collectives x hop "
              "latency, layer_overhead_us";
     }},
    {lora_wrapper, "lora_wrapper",
     [](const RooflineShape&) {
       return "prime-rl's MultiLoRALinear per adapted linear and forward (and AC recompute): its "
              "tensor assert and repeat_interleave (2 syncs; off SM90 one more per adapter "
              "slot), the slots' stack, the scale and full-width add (" +
              num(kWrapperFwdBytes) + " B x t x out forward; backward " + num(kWrapperBwdBytes) +
              " B x t x out and the input grad's add " + num(kWrapperInputGradBytes) +
              " B x t x in): bytes / HBM, the 2 syncs x (host_sync_us + " +
              num(kCompiledGraphCallUs) +
              " us, the compiled graph's call that resumes after each: they break the graph), "
              "the loop's syncs x (host_sync_us + eager_op_us), " +
              num(kWrapperLaunches) + " launches per pass x kernel_launch_us";
     }},
    {expert_loop, "expert_loop",
     [](const RooflineShape&) {
       // Forward, backward, and in a layer under AC the forward again in the recompute
       // (ac_layers.h decides which layers).
       return "LoRA experts off SM90: prime-rl's per-expert eager loop, " + num(kLoopOpsFwd) +
              " ops per expert forward (again in an AC layer's recompute) and " + num(kLoopOpsBwd) +
              " backward, with tokens per micro step x eager_op_us, less the expert GEMMs it "
              "hides";
     }},
    {fsdp_copies, "fsdp_copies",
     [](const RooflineShape&) {
       return "FSDP2's copies on the compute stream: each all-gather's copy-out (" +
              num(kCopyOutBytes) +
              " B per gathered element; a decoder layer gathered in forward and again in "
              "backward, the root once) and each reduce-scatter's copy-in (" +
              num(kCopyInReadBytes) +
              " + reduce_dtype B per trained element, in backward): bytes / HBM";
     }},
};
static_assert(std::size(kOpClasses) == kClasses, "one row per operation class");
inline constexpr bool rows_in_order() {
  for (int i = 0; i < kClasses; ++i) {
    if (kOpClasses[i].id != i) return false;
  }
  return true;
}
static_assert(rows_in_order(), "kOpClasses in OpClass's order");

}  // namespace muonplan::roofline_ops
