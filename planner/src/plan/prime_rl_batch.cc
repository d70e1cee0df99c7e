// Tokens per step, rows and activations from a prime-rl config (docs/trainer-config.md,
// "Tokens per step"): RL packs samples into rows of seq_len, one row per micro step; SFT steps
// data.batch_size rows, micro_batch_size of them per micro step.
#include "trainer_file.h"

namespace muonplan::detail {
namespace {

void warn(const TrainerFile& f, TrainerConfig& tc, const std::string& table, const std::string& key,
          const std::string& message) {
  const TomlNode* n = f.get(table, key);
  tc.warnings.push_back(f.path() + ":" + std::to_string(n->line) + ":" + std::to_string(n->col) +
                        ": " + f.field(table, key) + ": " + message);
}

void read_activations(const TrainerFile& f, TrainerConfig& tc) {
  const bool offload = f.section("model", "ac_offloading", true);
  bool ac = f.section("model", "ac", true);
  if (!ac && offload) {
    tc.notes.push_back(f.field("model", "ac") +
                       " = \"None\", yet ac_offloading is on and turns it on");
    ac = true;
  }
  // selective (and the later schemas' full_moe, projections, ...) keep more than full AC.
  if (const std::string mode = f.string("model", "ac.mode", "full"); ac && mode != "full")
    warn(f, tc, "model", "ac.mode",
         mode + " AC is planned as full AC, which saves fewer activations: a lower bound");
  if (ac && f.integer("model", "ac.freq", 1) > 1)
    warn(f, tc, "model", "ac.freq", "planned as freq 1 (every layer checkpointed)");
  tc.values.push_back(f.value("ac", ac ? "full" : "none", "model", "ac"));
  tc.values.push_back(f.value("ac-offload", offload ? "true" : "false", "model", "ac_offloading"));
  const int64_t inflight = f.integer("model", "ac_offloading.max_inflight_activations", 5);
  tc.values.push_back(f.value("ac-max-inflight", std::to_string(inflight), "model",
                              "ac_offloading.max_inflight_activations"));
}

// RL: 8192 tokens unless "disabled"; older files' "auto" meant 8192 too. SFT ignores the key.
void read_lm_head(const TrainerFile& f, TrainerConfig& tc) {
  const std::string key = f.get("model", "fused_lm_head_chunk_size") &&
                                  !f.get("model", "fused_lm_head_token_chunk_size")
                              ? "fused_lm_head_chunk_size"
                              : "fused_lm_head_token_chunk_size";
  if (f.get("model", "fused_lm_head_chunk_size") &&
      f.get("model", "fused_lm_head_token_chunk_size"))
    f.fail("model", "fused_lm_head_chunk_size",
           "older name of fused_lm_head_token_chunk_size; give one of them");
  const TomlNode* n = f.get("model", key);
  int64_t chunk = 8192;
  if (n && n->kind == TomlNode::Kind::string) {
    if (n->str == "disabled") {
      chunk = 0;
    } else if (n->str != "auto") {
      f.fail("model", key,
             "expected a positive integer, \"disabled\" or \"auto\", got " + n->shown());
    }
  } else if (n) {
    chunk = f.integer("model", key, 8192);
  }
  if (f.sft()) {
    if (n) warn(f, tc, "model", key, "SFT does not use the fused LM head: planned unfused");
    chunk = 0;
  }
  tc.values.push_back(f.value("lm-head-chunk", std::to_string(chunk), "model", key));
}

void read_rl_batch(const TrainerFile& f, TrainerConfig& tc, int64_t seq_len) {
  tc.seq_len = seq_len;
  const int64_t workers = int64_t(tc.nodes) * tc.gpus_per_node / tc.cp;
  if (f.get("orchestrator", "token_batch_size") && f.get("orchestrator", "batch_size"))
    f.fail("orchestrator", "token_batch_size", "give batch_size or token_batch_size, not both");
  int64_t tokens = 0;
  if (f.get("orchestrator", "token_batch_size")) {
    tc.batch_key = "token_batch_size";
    tokens = f.integer("orchestrator", "token_batch_size", 1);
  } else {
    tc.batch_key = "batch_size";
    const int64_t batch = f.integer("orchestrator", "batch_size", 128);
    const std::string group_key =
        f.get("orchestrator", "rollouts_per_example") ? "rollouts_per_example" : "group_size";
    if (f.get("orchestrator", "rollouts_per_example") && f.get("orchestrator", "group_size"))
      f.fail("orchestrator", "rollouts_per_example", "older name of group_size; give one of them");
    const int64_t group = f.integer("orchestrator", group_key, 1);
    if (batch % group != 0)
      f.fail("orchestrator", "batch_size",
             "not a multiple of " + group_key + " = " + std::to_string(group));
    tokens = batch * seq_len;
    tc.notes.push_back(
        "orchestrator.batch_size = " + std::to_string(batch) + " samples: planned as " +
        std::to_string(batch) + " full rows of " + std::to_string(seq_len) +
        " tokens, an upper bound (samples are packed into rows); give the real figure "
        "with --tokens-per-step or [orchestrator] token_batch_size");
  }
  tc.rl_tokens = tokens;
  const int64_t planned = whole_rows(tokens, seq_len, workers);
  if (planned != tokens) {
    tc.notes.push_back(std::to_string(tokens) + " tokens planned as " + std::to_string(planned) +
                       ": whole rows of " + std::to_string(seq_len) + " for " +
                       std::to_string(workers) + " workers (world / cp)");
  }
  tc.values.push_back(
      f.value("tokens-per-step", std::to_string(planned), "orchestrator", tc.batch_key));
  tc.values.push_back(f.value("micro-batch-seqs", "1", "orchestrator", tc.batch_key));
}

void read_sft_batch(const TrainerFile& f, TrainerConfig& tc, int64_t seq_len) {
  const int64_t world = int64_t(tc.nodes) * tc.gpus_per_node;
  const int64_t batch = f.integer("data", "batch_size", 128);
  const int64_t micro = f.integer("data", "micro_batch_size", 1);
  if (tc.cp > 1 && micro != 1)
    f.fail("data", "micro_batch_size", "context parallelism needs micro_batch_size = 1");
  if ((batch * tc.cp) % (world * micro) != 0) {
    f.fail("data", "batch_size",
           "batch_size x cp = " + std::to_string(batch * tc.cp) +
               " does not divide by world x micro_batch_size = " + std::to_string(world * micro));
  }
  tc.batch_key = "batch_size";
  tc.values.push_back(
      f.value("tokens-per-step", std::to_string(batch * seq_len), "data", "batch_size"));
  tc.values.push_back(
      f.value("micro-batch-seqs", std::to_string(micro), "data", "micro_batch_size"));
}

}  // namespace

int64_t whole_rows(int64_t tokens, int64_t seq_len, int64_t workers) {
  const int64_t per = seq_len * workers;
  return (tokens + per - 1) / per * per;
}

void read_batch(const TrainerFile& f, TrainerConfig& tc) {
  int64_t seq_len = 0;
  std::string table = "", key = "seq_len";
  if (f.sft()) {
    table = f.get("data", "seq_len") || !f.get("", "seq_len") ? "data" : "";
    seq_len = f.integer(table, key, 128);
  } else {
    const int64_t shared = f.integer("", "seq_len", 2048);
    if (f.get("model", "seq_len")) table = "model";
    seq_len = f.integer("model", "seq_len", shared);
    const int64_t orch = f.integer("orchestrator", "seq_len", shared);
    if (orch > seq_len)
      f.fail("orchestrator", "seq_len", "exceeds the trainer's seq_len " + std::to_string(seq_len));
  }
  if (seq_len % tc.cp != 0)
    f.fail(table, key,
           std::to_string(seq_len) + " does not divide by cp = " + std::to_string(tc.cp));
  tc.values.push_back(f.value("seq-len", std::to_string(seq_len), table, key));
  read_activations(f, tc);
  read_lm_head(f, tc);
  if (f.sft()) {
    read_sft_batch(f, tc, seq_len);
  } else {
    read_rl_batch(f, tc, seq_len);
  }
}

}  // namespace muonplan::detail
