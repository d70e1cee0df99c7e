// One rank's allocation timeline for a training step as a PyTorch FSDP2 trainer (prime-rl)
// issues it, and its replay through the caching-allocator model (caching_allocator.h): the
// allocated and reserved peaks, where in the step each falls and what is live there
// (docs/planner.md, "The allocation timeline"). Internal to the cost model.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "cost/caching_allocator.h"
#include "muonplan/planner/cost_model.h"

namespace muonplan {

// The allocator pools a step uses: the default (compute) stream and FSDP2's side streams.
enum StepStream : int { kDefaultStream = 0, kAllGatherStream = 1, kReduceScatterStream = 2 };
const char* stream_name(int stream);

// A tensor's name, composed only when a report asks for it (TimelineTensor::name()): a
// timeline holds some 20k tensors, and building each name as a string made most of a
// replay's heap allocations (the planner replays one timeline per candidate). The parts:
// "layers.N." (or "root.") when `layer` is set, then `head`, `*owned`, `mid`, `tail`.
struct TensorName {
  static constexpr int64_t kNoLayer = INT64_MIN;
  int64_t layer = kNoLayer;
  const char* head = "";
  const std::string* owned = nullptr;  // kept by the timeline (StepTimeline::keep)
  const char* mid = "";
  const char* tail = "";
  std::string str() const;
};

struct TimelineTensor {
  TensorName label;       // e.g. "layers.3.mlp_gate"
  std::string_view kind;  // the term it belongs to, e.g. "recomputed_layer_activations"
  int64_t bytes = 0;
  int stream = kDefaultStream;
  std::string name() const { return label.str(); }
};

struct TimelineEvent {
  int tensor = 0;  // index into StepTimeline::tensors
  bool alloc = true;
  int where = 0;  // index into StepTimeline::phases
};

struct StepTimeline {
  std::vector<TimelineTensor> tensors;
  std::vector<TimelineEvent> events;
  std::vector<std::string> phases;  // "forward layer 3", "LM head", "optimizer step", ...
  std::string prefix;               // put before each phase: "step 2, micro step 1: "
  // Strings the names and kinds point into (a deque: its elements never move).
  std::deque<std::string> strings;
  const std::string* keep(std::string s) {
    strings.push_back(std::move(s));
    return &strings.back();
  }
  // Recording helpers: a tensor allocated now (returns its id) and freed later. `kind` is a
  // string literal or a kept string.
  void phase(std::string p);
  int alloc(TensorName name, std::string_view kind, double bytes, int stream = kDefaultStream);
  void free(int tensor);
};

// Inputs of the timeline that the cost model already computed: the optimizer step's buffers
// (its gpu_transient_bytes terms) and the runtime's workspace; and what differs by runtime
// (step_timeline_inputs, runtime_memory.h).
struct TimelineInputs {
  std::vector<Term> step_transient;  // allocated for the optimizer step, freed after
  double cublas_workspace_bytes = 0;
  int ac_offload_inflight = 5;  // layer inputs on the GPU while they stream to the host
  double backward_temporaries_fraction = 0;  // PytorchRuntime's: of a layer's activations
  // torch's foreach AdamW's sqrt(exp_avg_sq) temporaries (the pytorch runtime); the muonplan
  // executor's AdamW makes none: its step buffers are step_transient.
  bool adamw_foreach_temporaries = true;
  // The kernel attention runs as (resolved: never auto): its backward's workspace
  // (backward_temporaries.h).
  AttentionKernel attention = AttentionKernel::fa2;
  int peak_rank = 0;
};

// The Prediction list the term of a tensor kind goes in: the state a rank keeps between steps
// (parameters, gradients, optimizer state), the optimizer step's buffers (`in.step_transient`
// and AdamW's foreach temporaries), the runtime's own (the cuBLAS workspace), or the
// workload's (every other kind: activations, the LM head, FSDP2's buffers, ...).
enum class TimelineTermList { persistent, transient, runtime, workload };
TimelineTermList timeline_term_list(std::string_view kind, const TimelineInputs& in);

// The timeline of `steps` training steps (the first creates the optimizer state lazily, the
// second runs with it, as steady state does) of one micro step each, or two when the step
// has more (the first creates the gradients, the rest accumulate into them). Without a
// workload: the persistent state and the optimizer step's buffers.
StepTimeline build_step_timeline(const ModelSpec& spec, const ParamInventory& inv,
                                 const PlanOptions& o, const ChunkPlan& plan,
                                 const TimelineInputs& in, int steps = 2);

// One peak of a replay: its bytes, where it fell and the live tensors there, summed by kind:
// their blocks (`live`), or the bytes they requested (`requested`, each formula saying where)
// and the blocks' rounding beside them. Either way the sum is the allocated bytes there.
struct TimelinePeak {
  int64_t bytes = 0;
  std::string where;
  std::vector<Term> live;       // per kind, block bytes
  std::vector<Term> requested;  // per kind, requested bytes
  int64_t rounding = 0;         // the live blocks' bytes past their requests
  int live_tensors = 0;
};

struct TimelineReplay {
  TimelinePeak allocated, reserved;
  std::vector<std::pair<int, int64_t>> reserved_by_stream;  // at the end
  int segments = 0;
  bool out_of_memory = false;
};

TimelineReplay replay_timeline(const StepTimeline& tl, const AllocatorConfig& cfg);

// The timeline's allocated peak without a caching allocator (the muonplan runtime: every tensor
// its requested bytes, no rounding, no reserve): the most bytes live at once, the first event
// that reaches it, and the live tensors there by kind.
TimelinePeak live_peak(const StepTimeline& tl);

}  // namespace muonplan
