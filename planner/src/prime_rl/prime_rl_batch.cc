// Tokens per step, rows and activations from a prime-rl config (docs/trainer-config.md,
// "Tokens per step"): RL packs samples into rows of seq_len, one row per micro step; SFT steps
// data.batch_size rows, micro_batch_size of them per micro step.
#include "muonplan/base/checked_int.h"
#include "trainer_file.h"

namespace muonplan::detail {

void warn_at(const TrainerFile& f, TrainerConfig& tc, const std::string& table,
             const std::string& key, const std::string& message) {
  const TomlNode* n = f.get(table, key);
  tc.warnings.push_back(value_at(f.path(), *n) + f.field(table, key) + ": " + message);
}

namespace {

void read_activations(const TrainerFile& f, TrainerConfig& tc) {
  const bool offload = f.section("model", "ac_offloading", f.defaults().ac_offloading);
  bool ac = f.section("model", "ac", f.defaults().ac);
  if (!ac && offload) {
    tc.notes.push_back(f.field("model", "ac") +
                       " = \"None\", yet ac_offloading is on and turns it on");
    ac = true;
  }
  // [model.ac] mode, targets and freq as apply_ac runs them (docs/trainer-config.md,
  // "Activation checkpointing"); a later schema's modes and operator targets are not modelled.
  std::string mode = ac ? f.string("model", "ac.mode", "full") : "none";
  if (mode != "full" && mode != "selective" && mode != "none") {
    warn_at(f, tc, "model", "ac.mode",
            mode + " AC is planned as full AC, which saves fewer activations: a lower bound");
    mode = "full";
  }
  const int64_t freq = ac ? f.integer("model", "ac.freq", 1) : 1;
  std::string targets;
  if (const TomlNode* t = f.get("model", "ac.targets"); t && mode == "selective") {
    for (const TomlNode& item : t->items) {
      if (item.kind != TomlNode::Kind::string)
        f.fail("model", "ac.targets", "expected a list of target names");
      const bool known = item.str == "norm" || item.str == "attn_proj" || item.str == "mlp" ||
                         item.str == "mla_up_proj" || item.str == "routed_experts" ||
                         item.str == "linear_attn";
      if (!known) {
        warn_at(f, tc, "model", "ac.targets",
                item.str +
                    " is not a target of prime-rl's selective AC (norm, attn_proj, mlp, "
                    "mla_up_proj, routed_experts, linear_attn; an older or later era's "
                    "name): planned as saving nothing, an upper bound");
        continue;
      }
      targets += (targets.empty() ? "" : ",") + item.str;
    }
    // Every target unknown: an empty list would read as the default (norm), which saves as
    // little in the plan; plan the layers as keeping everything.
    if (targets.empty() && !t->items.empty()) mode = "none";
  }
  bool offload_on = offload;
  if (offload && (mode == "selective" || freq > 1)) {
    warn_at(f, tc, "model", f.get("model", "ac.mode") ? "ac.mode" : "ac.freq",
            "ac_offloading with selective AC or freq > 1 is planned without the offload (what "
            "prime-rl offloads there is not modelled): GPU memory an upper bound");
    offload_on = false;
  }
  tc.values.push_back(f.value("ac", mode, "model", mode == "selective" ? "ac.mode" : "ac"));
  if (mode == "selective" && !targets.empty())
    tc.values.push_back(f.value("ac-targets", targets, "model", "ac.targets"));
  if (freq != 1 && mode != "none")
    tc.values.push_back(f.value("ac-freq", std::to_string(freq), "model", "ac.freq"));
  tc.values.push_back(
      f.value("ac-offload", offload_on ? "true" : "false", "model", "ac_offloading"));
  // Only when the file sets it; else the topology's pytorch.ac_offload_inflight_layers (prime-rl's
  // default, 5) applies.
  if (f.get("model", "ac_offloading.max_inflight_activations")) {
    const int64_t inflight = f.integer("model", "ac_offloading.max_inflight_activations", 1);
    tc.values.push_back(f.value("ac-max-inflight", std::to_string(inflight), "model",
                                "ac_offloading.max_inflight_activations"));
  }
}

// RL: prime-rl's default of the version (8192 tokens now), "disabled" off; a written "auto" is
// the era's (2048 before #1892, 8192 after: prime_rl_versions.cc). SFT ignores the key.
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
  int64_t chunk = n ? f.defaults().lm_head_auto_chunk : f.defaults().lm_head_chunk;
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
    if (n) warn_at(f, tc, "model", key, "SFT does not use the fused LM head: planned unfused");
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
    tokens = checked_mul(batch, seq_len, "orchestrator.batch_size", "batch_size x seq_len");
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
  const int64_t rows_cp = checked_mul(batch, tc.cp, "data.batch_size", "batch_size x cp");
  const int64_t per_micro =
      checked_mul(world, micro, "data.micro_batch_size", "world x micro_batch_size");
  if (rows_cp % per_micro != 0) {
    f.fail("data", "batch_size",
           "batch_size x cp = " + std::to_string(rows_cp) +
               " does not divide by world x micro_batch_size = " + std::to_string(per_micro));
  }
  const int64_t tokens = checked_mul(batch, seq_len, "data.batch_size", "batch_size x seq_len");
  tc.batch_key = "batch_size";
  tc.values.push_back(f.value("tokens-per-step", std::to_string(tokens), "data", "batch_size"));
  tc.values.push_back(
      f.value("micro-batch-seqs", std::to_string(micro), "data", "micro_batch_size"));
}

// The standalone trainer: [data.fake] batch_size rows of seq_len per step (default 2), dealt
// out whole to world / cp workers; older files' fake.micro_batch_size rows per micro step.
// Without [data.fake] it trains on the orchestrator's rollouts, which the file does not size.
void read_trainer_batch(const TrainerFile& f, TrainerConfig& tc, int64_t seq_len) {
  tc.seq_len = seq_len;
  tc.batch_key = "fake.batch_size";
  int64_t rows = 128;
  if (f.get("data", "fake") && f.section("data", "fake", false)) {
    rows = f.integer("data", "fake.batch_size", 2);
  } else {
    tc.notes.push_back(
        "no [data.fake]: the trainer takes the orchestrator's rows; planned as 128 full rows of " +
        std::to_string(seq_len) +
        " (the orchestrator's default batch_size), an upper bound; give the real figure with "
        "--tokens-per-step");
  }
  const int64_t micro = f.integer("data", "fake.micro_batch_size", 1);
  if (rows % micro != 0)
    f.fail("data", "fake.batch_size",
           "not a multiple of fake.micro_batch_size = " + std::to_string(micro));
  tc.rl_tokens = checked_mul(rows, seq_len, "data.fake.batch_size", "batch_size x seq_len");
  const int64_t workers = int64_t(tc.nodes) * tc.gpus_per_node / tc.cp;
  const int64_t planned = whole_rows(tc.rl_tokens, seq_len, workers);
  if (planned != tc.rl_tokens)  // as read_rl_batch says it: both figures
    tc.notes.push_back(std::to_string(tc.rl_tokens) + " tokens planned as " +
                       std::to_string(planned) + ": whole rows of " + std::to_string(seq_len) +
                       " for " + std::to_string(workers) + " workers (world / cp)");
  tc.values.push_back(
      f.value("tokens-per-step", std::to_string(planned), "data", "fake.batch_size"));
  tc.values.push_back(
      f.value("micro-batch-seqs", std::to_string(micro), "data", "fake.micro_batch_size"));
}

}  // namespace

int64_t whole_rows(int64_t tokens, int64_t seq_len, int64_t workers) {
  const int64_t per = checked_mul(seq_len, workers, "seq_len", "seq_len x workers (world / cp)");
  const int64_t rows =
      checked_add(tokens, per - 1, "tokens-per-step", "tokens + a row per worker") / per;
  return checked_mul(rows, per, "tokens-per-step", "rows x seq_len x workers");
}

namespace {

// The row length and the key that sets it. RL: prime-rl packs rows to the orchestrator's
// seq_len; the trainer's is only an upper bound on it. SFT: [data] seq_len (older files: top
// level). Trainer: [model] seq_len (older files: [data.fake] seq_len).
std::pair<std::string, int64_t> row_length(const TrainerFile& f, TrainerConfig& tc) {
  if (f.sft()) {
    const std::string table = f.get("data", "seq_len") || !f.get("", "seq_len") ? "data" : "";
    return {table, f.integer(table, "seq_len", 128)};
  }
  if (f.standalone()) {
    if (f.get("data", "fake.seq_len")) return {"data", f.integer("data", "fake.seq_len", 1)};
    return {"model", f.integer("model", "seq_len", 2048)};
  }
  const int64_t shared = f.integer("", "seq_len", 2048);
  const int64_t trainer = f.integer("model", "seq_len", shared);
  const std::string table = f.get("orchestrator", "seq_len") ? "orchestrator" : "";
  const int64_t rows = f.integer(table, "seq_len", 2048);
  if (rows > trainer)
    f.fail(table, "seq_len", "exceeds the trainer's seq_len " + std::to_string(trainer));
  if (rows < trainer)
    tc.notes.push_back("rows of " + std::to_string(rows) + " tokens (" +
                       (f.get(table, "seq_len") ? f.field(table, "seq_len") + ", "
                                                : std::string("orchestrator seq_len default, ")) +
                       "what the orchestrator packs); " + f.field("model", "seq_len") + " = " +
                       std::to_string(trainer) + " is only its upper bound");
  return {table, rows};
}

}  // namespace

void read_batch(const TrainerFile& f, TrainerConfig& tc) {
  const auto [table, seq_len] = row_length(f, tc);
  const std::string key = table == "data" && f.standalone() ? "fake.seq_len" : "seq_len";
  if (seq_len % tc.cp != 0)
    f.fail(table, key,
           std::to_string(seq_len) + " does not divide by cp = " + std::to_string(tc.cp));
  // prime-rl's SFT trainer splits each row into 2 x cp chunks (load-balanced ring attention).
  if (f.sft() && tc.cp > 1 && seq_len % (2 * tc.cp) != 0)
    f.fail(table, key,
           std::to_string(seq_len) + " does not divide by 2 x cp = " + std::to_string(2 * tc.cp) +
               " (prime-rl's SFT trainer checks it)");
  tc.values.push_back(f.value("seq-len", std::to_string(seq_len), table, key));
  read_activations(f, tc);
  read_lm_head(f, tc);
  if (f.sft()) {
    read_sft_batch(f, tc, seq_len);
  } else if (f.standalone()) {
    read_trainer_batch(f, tc, seq_len);
  } else {
    read_rl_batch(f, tc, seq_len);
  }
}

}  // namespace muonplan::detail
