// ModelSpec: the architecture facts the planner needs, whichever file they came from (our YAML
// format, docs/model-spec.md, or a Hugging Face config.json). Sizes are element counts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace muonplan {

enum class AttentionKind { gqa, mla };

struct AttentionSpec {
  AttentionKind kind = AttentionKind::gqa;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // gqa only; defaults to num_heads
  int64_t head_dim = 0;      // gqa only; defaults to hidden_size / num_heads
  bool qkv_bias = false;     // biases on q, k and v projections
  bool o_bias = false;
  bool qk_norm = false;  // per-head RMSNorm gains on q and k (Qwen3)
  // Multi-head latent attention (DeepSeek-V3, Kimi-K2, GLM-5).
  int64_t q_lora_rank = 0;  // 0: a plain q_proj instead of q_a/q_b
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
  // DeepSeek sparse attention "lightning indexer" (GLM-5, DeepSeek-V3.2); 0 heads: none.
  int64_t indexer_num_heads = 0;
  int64_t indexer_head_dim = 0;
};

struct MoeSpec {
  int64_t num_experts = 0;  // routed experts per MoE layer; 0: dense model
  int64_t intermediate_size = 0;
  int64_t num_shared_experts = 0;
  int64_t shared_intermediate_size = 0;  // of the one shared MLP; default num_shared * intermediate
  int64_t first_dense_layers = 0;        // leading layers with a dense MLP (first_k_dense_replace)
  int64_t layer_freq = 1;                // every layer_freq-th layer (after the dense ones) is MoE
  std::vector<int64_t> dense_layers;     // extra layers forced dense (Qwen mlp_only_layers)
  bool router_bias = false;              // score-correction bias [E] (noaux_tc routing)
  int64_t experts_per_token = 0;         // routed experts per token (top-k); workload FLOPs
};

// How weights are laid out in memory, which decides what a "matrix" is for Muon.
struct StorageSpec {
  bool fused_qkv = false;       // one [q+k+v, hidden] weight with three partitions (gqa only)
  bool fused_gate_up = false;   // one [2*ffn, hidden] weight with two partitions
  bool stacked_experts = true;  // routed experts as [E, out, in] stacks; else one tensor each
};

struct ModelSpec {
  std::string name;
  std::string family;  // e.g. llama, qwen3_moe, deepseek_v3: informational
  std::string hf_id;   // the Hugging Face id a bundled spec stands for (model resolution)
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t intermediate_size = 0;  // dense MLP; may be 0 when every layer is MoE
  bool mlp_bias = false;
  bool tie_embeddings = false;
  AttentionSpec attention;
  MoeSpec moe;
  int64_t mtp_layers = 0;  // multi-token-prediction layers, reported apart from the main model
  StorageSpec storage;

  bool is_moe_layer(int64_t layer) const;
};

}  // namespace muonplan
