// Our YAML model-spec format (docs/model-spec.md) and the checks every spec must pass.
#include <algorithm>
#include <cctype>

#include "muonplan/base/io.h"
#include "muonplan/base/json_bounds.h"
#include "muonplan/planfile/plan_checks.h"
#include "muonplan/planner/model_io.h"
#include "muonplan/planner/yaml_reader.h"
#include "spec/model_limits.h"

namespace muonplan {

using detail::YamlMap;

namespace {

void bounded(const YamlMap& m, const std::string& key, int64_t v) {
  const int64_t max = detail::max_size_for(key);
  if (v > max) {
    m.fail(key, "is " + std::to_string(v) + ", more than muonplan plans for (" +
                    std::to_string(max) + ")");
  }
}

int64_t positive(const YamlMap& m, const std::string& key) {
  const int64_t v = m.get_int(key);
  if (v <= 0) m.fail(key, "must be positive, got " + std::to_string(v));
  bounded(m, key, v);
  return v;
}

int64_t non_negative(const YamlMap& m, const std::string& key, int64_t fallback) {
  const int64_t v = m.get_int(key, fallback);
  if (v < 0) m.fail(key, "must not be negative, got " + std::to_string(v));
  bounded(m, key, v);
  return v;
}

void read_attention(const YamlMap& m, ModelSpec& s) {
  AttentionSpec& a = s.attention;
  const std::string type = m.get_string("type", "gqa");
  if (type == "mla") {
    a.kind = AttentionKind::mla;
  } else if (type != "gqa") {
    m.fail("type", "expected gqa or mla, got '" + type + "'");
  }
  a.num_heads = positive(m, "num_heads");
  a.qkv_bias = m.get_bool("qkv_bias", false);
  a.o_bias = m.get_bool("o_bias", false);
  a.qk_norm = m.get_bool("qk_norm", false);
  if (a.kind == AttentionKind::gqa) {
    a.num_kv_heads = m.has("num_kv_heads") ? positive(m, "num_kv_heads") : a.num_heads;
    if (a.num_heads % a.num_kv_heads != 0) {
      m.fail("num_kv_heads", "must divide num_heads (" + std::to_string(a.num_heads) + "), got " +
                                 std::to_string(a.num_kv_heads));
    }
    if (m.has("head_dim")) {
      a.head_dim = positive(m, "head_dim");
    } else {
      if (s.hidden_size % a.num_heads != 0) {
        m.fail("num_heads", "must divide hidden_size (" + std::to_string(s.hidden_size) +
                                ") when head_dim is not given, got " + std::to_string(a.num_heads));
      }
      a.head_dim = s.hidden_size / a.num_heads;
    }
    m.check_known(
        {"type", "num_heads", "num_kv_heads", "head_dim", "qkv_bias", "o_bias", "qk_norm"});
    return;
  }
  a.q_lora_rank = non_negative(m, "q_lora_rank", 0);
  a.kv_lora_rank = positive(m, "kv_lora_rank");
  a.qk_nope_head_dim = positive(m, "qk_nope_head_dim");
  a.qk_rope_head_dim = positive(m, "qk_rope_head_dim");
  a.v_head_dim = positive(m, "v_head_dim");
  if (auto idx = m.get_optional_map("indexer")) {
    a.indexer_num_heads = positive(*idx, "num_heads");
    a.indexer_head_dim = positive(*idx, "head_dim");
    idx->check_known({"num_heads", "head_dim"});
    if (a.q_lora_rank == 0)
      m.fail("indexer", "needs q_lora_rank > 0 (its wq_b reads the q latent)");
  }
  m.check_known({"type", "num_heads", "qkv_bias", "o_bias", "qk_norm", "q_lora_rank",
                 "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "indexer"});
}

void read_moe(const YamlMap& m, ModelSpec& s) {
  MoeSpec& e = s.moe;
  e.num_experts = positive(m, "num_experts");
  e.intermediate_size = positive(m, "intermediate_size");
  e.num_shared_experts = non_negative(m, "num_shared_experts", 0);
  e.shared_intermediate_size =
      non_negative(m, "shared_intermediate_size", e.num_shared_experts * e.intermediate_size);
  if (e.num_shared_experts > 0 && e.shared_intermediate_size == 0) {
    m.fail("shared_intermediate_size", "must be positive when num_shared_experts > 0");
  }
  e.first_dense_layers = non_negative(m, "first_dense_layers", 0);
  e.layer_freq = m.has("layer_freq") ? positive(m, "layer_freq") : 1;
  e.dense_layers = m.get_int_list("dense_layers");
  for (size_t i = 0; i < e.dense_layers.size(); ++i) {
    const int64_t l = e.dense_layers[i];
    if (l < 0 || l >= s.num_layers) {
      m.fail_at(
          m.raw("dense_layers")[i], "dense_layers",
          "layer " + std::to_string(l) + " is outside 0.." + std::to_string(s.num_layers - 1));
    }
  }
  e.router_bias = m.get_bool("router_bias", false);
  e.experts_per_token = non_negative(m, "experts_per_token", 0);
  if (e.experts_per_token > e.num_experts) {
    m.fail("experts_per_token", "exceeds num_experts (" + std::to_string(e.num_experts) + ")");
  }
  m.check_known({"num_experts", "intermediate_size", "num_shared_experts",
                 "shared_intermediate_size", "first_dense_layers", "layer_freq", "dense_layers",
                 "router_bias", "experts_per_token"});
}

}  // namespace

ModelSpec parse_model_yaml(const std::string& text, const std::string& path) {
  const YamlMap root(detail::parse_yaml_text(text, path), path, "");
  ModelSpec s;
  s.name = root.get_string("name");
  if (const std::string why = name_problem(s.name); !why.empty()) root.fail("name", why);
  s.family = root.get_string("family", "");
  s.hf_id = root.get_string("hf_id", "");
  s.vocab_size = positive(root, "vocab_size");
  s.hidden_size = positive(root, "hidden_size");
  s.num_layers = positive(root, "num_layers");
  s.tie_embeddings = root.get_bool("tie_embeddings", false);
  s.mtp_layers = non_negative(root, "mtp_layers", 0);
  read_attention(root.get_map("attention"), s);
  if (auto moe = root.get_optional_map("moe")) read_moe(*moe, s);
  int64_t first_dense = -1;  // the first layer with a dense MLP, if any
  for (int64_t l = 0; l < s.num_layers + s.mtp_layers && first_dense < 0; ++l) {
    if (!s.is_moe_layer(l)) first_dense = l;
  }
  const bool any_dense = first_dense >= 0;
  if (auto mlp = root.get_optional_map("mlp")) {
    s.intermediate_size = any_dense ? positive(*mlp, "intermediate_size")
                                    : non_negative(*mlp, "intermediate_size", 0);
    s.mlp_bias = mlp->get_bool("bias", false);
    mlp->check_known({"intermediate_size", "bias"});
  } else if (any_dense) {
    root.fail("mlp", s.moe.num_experts == 0
                         ? "is required but missing: without a moe section every layer has a "
                           "dense MLP"
                         : "is required but missing: layer " + std::to_string(first_dense) +
                               " has a dense MLP");
  }
  if (auto st = root.get_optional_map("storage")) {
    s.storage.fused_qkv = st->get_bool("fused_qkv", false);
    s.storage.fused_gate_up = st->get_bool("fused_gate_up", false);
    s.storage.stacked_experts = st->get_bool("stacked_experts", true);
    if (s.storage.fused_qkv && s.attention.kind == AttentionKind::mla) {
      st->fail("fused_qkv", "applies to gqa attention only");
    }
    st->check_known({"fused_qkv", "fused_gate_up", "stacked_experts"});
  }
  root.check_known({"name", "family", "hf_id", "vocab_size", "hidden_size", "num_layers",
                    "tie_embeddings", "mtp_layers", "attention", "moe", "mlp", "storage"});
  detail::check_model_totals(s, path);
  return s;
}

ModelSpec load_model_yaml(const std::string& path) {
  return parse_model_yaml(read_input_file(path), path);
}

ModelSpec load_model(const std::string& path) {
  const std::string text = read_input_file(path);
  const auto first =
      std::find_if(text.begin(), text.end(), [](char c) { return !std::isspace(c); });
  const bool json_object = first != text.end() && *first == '{';
  if (json_object && text.find("\"model_type\"") != std::string::npos) {
    return parse_hf_config(text, path);
  }
  if (json_object) check_json_bounds(text, path);  // JSON read as YAML: yaml-cpp builds it all
  try {
    return parse_model_yaml(text, path);
  } catch (const InputError& e) {
    // A JSON object without model_type is read as YAML (JSON is YAML); when it lacks our `name`
    // too, it is most likely a Hugging Face config.json without its model_type.
    if (json_object && e.field() == "name" && e.message() == "is required but missing") {
      throw InputError({path, 1, 1}, "model_type",
                       "is required but missing (a Hugging Face config.json needs it; a "
                       "muonplan YAML spec needs name)");
    }
    throw;
  }
}

}  // namespace muonplan
