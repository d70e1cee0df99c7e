// Hugging Face config.json import. Field names and defaults follow transformers' config
// classes for each model type; weights are laid out as muonplan's defaults (separate q/k/v and
// gate/up, stacked experts) so a bundled YAML spec with the same defaults gives the same
// inventory.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "muonplan/base/io.h"
#include "muonplan/base/json_bounds.h"
#include "muonplan/planfile/plan_checks.h"
#include "muonplan/planner/model_io.h"
#include "muonplan/planner/yaml_reader.h"
#include "spec/model_limits.h"

namespace muonplan {
namespace {

using json = nlohmann::json;

// Line and column of a byte offset in text (1-based).
SourceLoc loc_at(const std::string& text, const std::string& path, size_t offset) {
  SourceLoc loc{path, 1, 1};
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++loc.line;
      loc.col = 1;
    } else {
      ++loc.col;
    }
  }
  return loc;
}

// nlohmann's parse_error::byte counts the bytes read up to the end of the offending token;
// returns the offset where that token starts, so a message points at its first character.
size_t token_start(const std::string& text, size_t byte) {
  if (byte == 0) return 0;
  size_t at = std::min(byte, text.size()) - 1;
  if (at >= text.size()) return at;
  if (text[at] == '"' && at > 0) {  // a string literal: back to its opening quote
    size_t open = at;
    while (open > 0) {
      --open;
      if (text[open] != '"') continue;
      size_t slashes = 0;
      while (open >= slashes + 1 && text[open - slashes - 1] == '\\') ++slashes;
      if (slashes % 2 == 0) return open;
    }
    return at;
  }
  auto word = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+';
  };
  while (at > 0 && word(text[at]) && word(text[at - 1])) --at;  // a number or true/false/null
  return at;
}

class Config {
 public:
  Config(const std::string& text, const std::string& path) : text_(text), path_(path) {
    check_json_bounds(text, path);  // json_bounds.h: before nlohmann recurses or allocates
    try {
      j_ = json::parse(text);
    } catch (const json::parse_error& e) {
      throw InputError(loc_at(text, path, token_start(text, e.byte)), "json",
                       json_error_text(e.what()));
    } catch (const json::exception& e) {
      // A number too large for a double ("1e400") is an out_of_range, without an offset.
      const std::string what = e.what();  // "[json.exception.out_of_range.406] number ..."
      throw InputError({path, 0, 0}, "json", what.substr(what.find("] ") + 2));
    }
    if (!j_.is_object()) throw InputError({path, 1, 1}, "json", "expected an object");
    // Not our format: transformers reads such a file (the last value wins), so warn only.
    for (const DuplicateKey& d : find_duplicate_keys(text, path)) {
      const std::string line = std::string("muonplan: warning: ") +
                               InputError(d.second, d.field, "").what() + "given twice, at lines " +
                               std::to_string(d.first.line) + " and " +
                               std::to_string(d.second.line) + "; the last value is used\n";
      std::fwrite(line.data(), 1, line.size(), stderr);
    }
  }

  // The position of "key": in the text, for messages; the file's start if not found.
  SourceLoc loc(const std::string& key) const {
    const size_t at = text_.find("\"" + key + "\"");
    return at == std::string::npos ? SourceLoc{path_, 1, 1} : loc_at(text_, path_, at);
  }
  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw InputError(loc(key), key, message);
  }

  bool has(const std::string& key) const { return j_.contains(key) && !j_[key].is_null(); }
  bool has_string(const std::string& key) const { return has(key) && j_[key].is_string(); }

  int64_t get_int(const std::string& key) const {
    if (!has(key)) fail(key, "is required but missing");
    const json& v = j_[key];
    if (!v.is_number_integer()) fail(key, "expected an integer, got " + json_brief(v));
    // Past INT64_MAX nlohmann holds an unsigned, which get<int64_t> would turn negative.
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) {
      fail(key, "is " + json_brief(v) + ", more than muonplan plans for (" +
                    std::to_string(detail::max_size_for(key)) + ")");
    }
    return v.get<int64_t>();
  }
  int64_t get_int(const std::string& key, int64_t fallback) const {
    return has(key) ? get_int(key) : fallback;
  }
  int64_t positive(const std::string& key) const {
    const int64_t v = get_int(key);
    if (v <= 0) fail(key, "must be positive, got " + std::to_string(v));
    return bounded(key, v);
  }
  int64_t non_negative(const std::string& key, int64_t fallback) const {
    const int64_t v = get_int(key, fallback);
    if (v < 0) fail(key, "must not be negative, got " + std::to_string(v));
    return bounded(key, v);
  }
  int64_t bounded(const std::string& key, int64_t v) const {
    const int64_t max = detail::max_size_for(key);
    if (v > max) {
      fail(key, "is " + std::to_string(v) + ", more than muonplan plans for (" +
                    std::to_string(max) + ")");
    }
    return v;
  }
  bool get_bool(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_boolean()) fail(key, "expected true or false, got " + json_brief(j_[key]));
    return j_[key].get<bool>();
  }
  std::string get_string(const std::string& key) const {
    if (!has(key)) fail(key, "is required but missing");
    if (!j_[key].is_string()) fail(key, "expected a string, got " + json_brief(j_[key]));
    const std::string& s = j_[key].get_ref<const std::string&>();
    if (const std::string why = text_problem(s); !why.empty()) fail(key, why);
    return s;
  }
  std::vector<int64_t> get_int_list(const std::string& key) const {
    std::vector<int64_t> out;
    if (!has(key)) return out;
    if (!j_[key].is_array()) fail(key, "expected a list of integers");
    for (const json& v : j_[key]) {
      if (!v.is_number_integer()) fail(key, "expected a list of integers");
      out.push_back(v.get<int64_t>());
    }
    return out;
  }

 private:
  const std::string& text_;
  std::string path_;
  json j_;
};

void read_common(const Config& c, ModelSpec& s) {
  s.vocab_size = c.positive("vocab_size");
  s.hidden_size = c.positive("hidden_size");
  s.num_layers = c.positive("num_hidden_layers");
  s.tie_embeddings = c.get_bool("tie_word_embeddings", false);
  s.attention.num_heads = c.positive("num_attention_heads");
}

void read_gqa(const Config& c, ModelSpec& s) {
  AttentionSpec& a = s.attention;
  a.num_kv_heads = c.has("num_key_value_heads") ? c.positive("num_key_value_heads") : a.num_heads;
  if (a.num_heads % a.num_kv_heads != 0) {
    c.fail("num_key_value_heads", "must divide num_attention_heads (" +
                                      std::to_string(a.num_heads) + "), got " +
                                      std::to_string(a.num_kv_heads));
  }
  if (c.has("head_dim")) {
    a.head_dim = c.positive("head_dim");
  } else {
    if (s.hidden_size % a.num_heads != 0) {
      c.fail("num_attention_heads", "must divide hidden_size (" + std::to_string(s.hidden_size) +
                                        ") when head_dim is not given, got " +
                                        std::to_string(a.num_heads));
    }
    a.head_dim = s.hidden_size / a.num_heads;
  }
}

void read_moe(const Config& c, ModelSpec& s, const char* experts_key) {
  s.moe.num_experts = c.positive(experts_key);
  s.moe.intermediate_size = c.positive("moe_intermediate_size");
  s.moe.experts_per_token = c.non_negative("num_experts_per_tok", 0);
}

void read_mla(const Config& c, ModelSpec& s) {
  AttentionSpec& a = s.attention;
  a.kind = AttentionKind::mla;
  a.q_lora_rank = c.non_negative("q_lora_rank", 0);  // null in DeepSeek-V2-Lite: plain q_proj
  a.kv_lora_rank = c.positive("kv_lora_rank");
  a.qk_nope_head_dim = c.positive("qk_nope_head_dim");
  a.qk_rope_head_dim = c.positive("qk_rope_head_dim");
  a.v_head_dim = c.positive("v_head_dim");
}

// DeepSeek-V3 family: MLA, leading dense layers, shared experts, noaux_tc routing.
void read_deepseek(const Config& c, ModelSpec& s, bool indexer) {
  read_mla(c, s);
  s.intermediate_size = c.positive("intermediate_size");
  read_moe(c, s, "n_routed_experts");
  s.moe.num_shared_experts = c.non_negative("n_shared_experts", 0);
  s.moe.shared_intermediate_size = s.moe.num_shared_experts * s.moe.intermediate_size;
  s.moe.first_dense_layers = c.non_negative("first_k_dense_replace", 0);
  s.moe.layer_freq = c.has("moe_layer_freq") ? c.positive("moe_layer_freq") : 1;
  s.moe.router_bias = !c.has("topk_method") || c.get_string("topk_method") == "noaux_tc";
  s.mtp_layers = c.non_negative("num_nextn_predict_layers", 0);
  if (indexer) {
    s.attention.indexer_num_heads = c.positive("index_n_heads");
    s.attention.indexer_head_dim = c.positive("index_head_dim");
    if (s.attention.q_lora_rank == 0)
      c.fail("q_lora_rank", "the DSA indexer needs q_lora_rank > 0");
  }
}

// The model's name: the file stem (tests/data/hf/glm-4.5-air.json -> glm-4.5-air); for a file
// called config.json, the last component of _name_or_path, else the model type.
std::string model_name(const Config& c, const std::string& path, const std::string& model_type) {
  const std::string stem = std::filesystem::path(path).stem().string();
  if (!stem.empty() && stem != "config") return stem;
  if (c.has_string("_name_or_path")) {
    std::string id = c.get_string("_name_or_path");
    while (!id.empty() && id.back() == '/') id.pop_back();
    const std::string last = id.substr(id.find_last_of('/') + 1);
    if (!last.empty()) return last;
  }
  return model_type;
}

}  // namespace

ModelSpec parse_hf_config(const std::string& text, const std::string& path) {
  const Config c(text, path);
  ModelSpec s;
  s.family = c.get_string("model_type");
  s.name = model_name(c, path, s.family);
  // From the file name or _name_or_path: the same rule as a YAML spec's name.
  if (const std::string why = name_problem(s.name); !why.empty())
    throw InputError({path, 0, 0}, "name", "the model name '" + printable(s.name) + "' " + why);
  read_common(c, s);
  const std::string& t = s.family;
  if (t == "llama") {
    read_gqa(c, s);
    s.intermediate_size = c.positive("intermediate_size");
    s.attention.qkv_bias = s.attention.o_bias = c.get_bool("attention_bias", false);
    s.mlp_bias = c.get_bool("mlp_bias", false);
  } else if (t == "qwen3" || t == "qwen3_moe") {
    read_gqa(c, s);
    s.attention.qkv_bias = s.attention.o_bias = c.get_bool("attention_bias", false);
    s.attention.qk_norm = true;
    s.intermediate_size = c.positive("intermediate_size");
    if (t == "qwen3_moe") {
      read_moe(c, s, "num_experts");
      // transformers: layer i is MoE iff i not in mlp_only_layers and (i+1) % step == 0.
      const int64_t step = c.has("decoder_sparse_step") ? c.positive("decoder_sparse_step") : 1;
      for (int64_t l = 0; l < s.num_layers; ++l) {
        if ((l + 1) % step != 0) s.moe.dense_layers.push_back(l);
      }
      for (int64_t l : c.get_int_list("mlp_only_layers")) {
        if (l < 0 || l >= s.num_layers) {
          c.fail("mlp_only_layers", "layer " + std::to_string(l) + " is outside 0.." +
                                        std::to_string(s.num_layers - 1));
        }
        s.moe.dense_layers.push_back(l);
      }
    }
  } else if (t == "glm4_moe") {
    read_gqa(c, s);
    // transformers' Glm4Moe: attention_bias puts biases on q/k/v only; o_proj has none.
    s.attention.qkv_bias = c.get_bool("attention_bias", false);
    s.attention.qk_norm = c.get_bool("use_qk_norm", false);
    s.intermediate_size = c.positive("intermediate_size");
    read_moe(c, s, "n_routed_experts");
    s.moe.num_shared_experts = c.non_negative("n_shared_experts", 0);
    s.moe.shared_intermediate_size = s.moe.num_shared_experts * s.moe.intermediate_size;
    s.moe.first_dense_layers = c.non_negative("first_k_dense_replace", 0);
    s.moe.router_bias = true;  // Glm4MoeTopkRouter always has e_score_correction_bias
    s.mtp_layers = c.non_negative("num_nextn_predict_layers", 0);
  } else if (t == "deepseek_v3" || t == "kimi_k2") {
    read_deepseek(c, s, false);
  } else if (t == "deepseek_v32" || t == "glm_moe_dsa") {
    read_deepseek(c, s, true);
  } else {
    c.fail("model_type",
           "unsupported '" + (t.size() > 60 ? t.substr(0, 57) + "..." : t) +
               "'; supported: llama, qwen3, qwen3_moe, glm4_moe, deepseek_v3, kimi_k2, "
               "deepseek_v32, glm_moe_dsa");
  }
  detail::check_model_totals(s, path);
  return s;
}

ModelSpec import_hf_config(const std::string& path) {
  return parse_hf_config(read_input_file(path), path);
}

}  // namespace muonplan
