#include "muonplan/planner/inventory.h"

#include <algorithm>
#include <map>
#include <utility>

namespace muonplan {

bool ModelSpec::is_moe_layer(int64_t layer) const {
  if (moe.num_experts <= 0 || layer < moe.first_dense_layers) return false;
  if (moe.layer_freq > 1 && layer % moe.layer_freq != 0) return false;
  return std::find(moe.dense_layers.begin(), moe.dense_layers.end(), layer) ==
         moe.dense_layers.end();
}

namespace {

// Appends tensors for one model; keeps the naming close to Hugging Face checkpoints so users
// recognise them (stacked experts drop the expert index, as torchtitan does).
class Builder {
 public:
  Builder(const ModelSpec& spec, ParamInventory& inv) : s_(spec), inv_(inv) {}

  void vec(const std::string& name, int64_t n) {
    add({name, {n}, UpdateRule::adamw, {}, -1, layer_, mtp_, false});
  }
  void mat(const std::string& name, int64_t out, int64_t in, std::vector<Partition> parts = {}) {
    add({name, {out, in}, UpdateRule::muon, std::move(parts), -1, layer_, mtp_, false});
  }
  void stack(const std::string& name, int64_t e, int64_t out, int64_t in,
             std::vector<Partition> parts = {}) {
    add({name, {e, out, in}, UpdateRule::muon, std::move(parts), 0, layer_, mtp_, true});
  }

  // Token embedding and output head: matrices, but AdamW's (docs/muon-step.md section 1).
  void vocab_matrix(const std::string& name) {
    add({name, {s_.vocab_size, s_.hidden_size}, UpdateRule::adamw, {}, -1, -1, false, false});
  }

  void embeddings() {
    layer_ = -1;
    vocab_matrix("model.embed_tokens.weight");
  }

  void head() {
    layer_ = -1;
    vec("model.norm.weight", s_.hidden_size);
    if (!s_.tie_embeddings) vocab_matrix("lm_head.weight");
  }

  void decoder_layer(int64_t layer, bool mtp) {
    layer_ = layer;
    mtp_ = mtp;
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    const int64_t h = s_.hidden_size;
    if (mtp) {
      vec(p + "enorm.weight", h);
      vec(p + "hnorm.weight", h);
      mat(p + "eh_proj.weight", h, 2 * h);
      vec(p + "shared_head.norm.weight", h);
    }
    vec(p + "input_layernorm.weight", h);
    vec(p + "post_attention_layernorm.weight", h);
    if (s_.attention.kind == AttentionKind::mla) {
      mla(p + "self_attn.");
    } else {
      gqa(p + "self_attn.");
    }
    if (s_.is_moe_layer(layer)) {
      moe(p + "mlp.");
    } else {
      mlp(p + "mlp.", s_.intermediate_size, s_.mlp_bias);
    }
    mtp_ = false;
  }

 private:
  void add(ParamTensor t) { inv_.tensors.push_back(std::move(t)); }

  void gqa(const std::string& p) {
    const AttentionSpec& a = s_.attention;
    const int64_t q = a.num_heads * a.head_dim, kv = a.num_kv_heads * a.head_dim;
    if (s_.storage.fused_qkv) {
      mat(p + "qkv_proj.weight", q + 2 * kv, s_.hidden_size, {{"q", q}, {"k", kv}, {"v", kv}});
      if (a.qkv_bias) vec(p + "qkv_proj.bias", q + 2 * kv);
    } else {
      for (auto [name, rows] : {std::pair{"q", q}, {"k", kv}, {"v", kv}}) {
        mat(p + name + "_proj.weight", rows, s_.hidden_size);
        if (a.qkv_bias) vec(p + name + "_proj.bias", rows);
      }
    }
    mat(p + "o_proj.weight", s_.hidden_size, q);
    if (a.o_bias) vec(p + "o_proj.bias", s_.hidden_size);
    if (a.qk_norm) {
      vec(p + "q_norm.weight", a.head_dim);
      vec(p + "k_norm.weight", a.head_dim);
    }
  }

  void mla(const std::string& p) {
    const AttentionSpec& a = s_.attention;
    const int64_t h = s_.hidden_size, qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    if (a.q_lora_rank > 0) {
      mat(p + "q_a_proj.weight", a.q_lora_rank, h);
      vec(p + "q_a_layernorm.weight", a.q_lora_rank);
      mat(p + "q_b_proj.weight", a.num_heads * qk, a.q_lora_rank);
    } else {
      mat(p + "q_proj.weight", a.num_heads * qk, h);
    }
    mat(p + "kv_a_proj_with_mqa.weight", a.kv_lora_rank + a.qk_rope_head_dim, h);
    vec(p + "kv_a_layernorm.weight", a.kv_lora_rank);
    mat(p + "kv_b_proj.weight", a.num_heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank);
    mat(p + "o_proj.weight", h, a.num_heads * a.v_head_dim);
    if (a.indexer_num_heads > 0) {
      mat(p + "indexer.wq_b.weight", a.indexer_num_heads * a.indexer_head_dim, a.q_lora_rank);
      mat(p + "indexer.wk.weight", a.indexer_head_dim, h);
      vec(p + "indexer.k_norm.weight", a.indexer_head_dim);
      vec(p + "indexer.k_norm.bias", a.indexer_head_dim);
      mat(p + "indexer.weights_proj.weight", a.indexer_num_heads, h);
    }
  }

  void mlp(const std::string& p, int64_t ffn, bool bias) {
    const int64_t h = s_.hidden_size;
    if (s_.storage.fused_gate_up) {
      mat(p + "gate_up_proj.weight", 2 * ffn, h, {{"gate", ffn}, {"up", ffn}});
      if (bias) vec(p + "gate_up_proj.bias", 2 * ffn);
    } else {
      mat(p + "gate_proj.weight", ffn, h);
      if (bias) vec(p + "gate_proj.bias", ffn);
      mat(p + "up_proj.weight", ffn, h);
      if (bias) vec(p + "up_proj.bias", ffn);
    }
    mat(p + "down_proj.weight", h, ffn);
    if (bias) vec(p + "down_proj.bias", h);
  }

  void moe(const std::string& p) {
    const MoeSpec& m = s_.moe;
    const int64_t h = s_.hidden_size, e = m.num_experts, ffn = m.intermediate_size;
    mat(p + "gate.weight", e, h);  // the router is a matrix: Muon (docs/muon-step.md section 1)
    if (m.router_bias) vec(p + "gate.e_score_correction_bias", e);
    if (s_.storage.stacked_experts) {
      if (s_.storage.fused_gate_up) {
        stack(p + "experts.gate_up_proj", e, 2 * ffn, h, {{"gate", ffn}, {"up", ffn}});
      } else {
        stack(p + "experts.gate_proj", e, ffn, h);
        stack(p + "experts.up_proj", e, ffn, h);
      }
      stack(p + "experts.down_proj", e, h, ffn);
    } else {
      for (int64_t i = 0; i < e; ++i) {
        const size_t first = inv_.tensors.size();
        mlp(p + "experts." + std::to_string(i) + ".", ffn, false);
        for (size_t t = first; t < inv_.tensors.size(); ++t) inv_.tensors[t].routed_expert = true;
      }
    }
    if (m.num_shared_experts > 0) mlp(p + "shared_experts.", m.shared_intermediate_size, false);
  }

  const ModelSpec& s_;
  ParamInventory& inv_;
  int64_t layer_ = -1;
  bool mtp_ = false;
};

}  // namespace

ParamInventory build_inventory(const ModelSpec& spec) {
  ParamInventory inv;
  inv.model_name = spec.name;
  Builder b(spec, inv);
  b.embeddings();
  for (int64_t l = 0; l < spec.num_layers; ++l) b.decoder_layer(l, false);
  b.head();
  for (int64_t k = 0; k < spec.mtp_layers; ++k) b.decoder_layer(spec.num_layers + k, true);
  return inv;
}

}  // namespace muonplan
