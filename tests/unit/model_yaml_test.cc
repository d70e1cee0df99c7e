// The bundled YAML model specs (models/*.yaml): each real model gives the same inventory as its
// Hugging Face config.json, the published totals, Muon/AdamW routing, and the tiny executor
// test models' fused partitions and awkward row counts.
#include <catch2/catch.hpp>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "muonplan/base/error.h"
#include "muonplan/planner/inventory.h"
#include "muonplan/planner/model_io.h"
#include "test_paths.h"

using namespace muonplan;
using test::error_of;

namespace {

const std::vector<std::string> kRealModels = {
    "qwen3-0.6b", "qwen3-4b", "qwen3-8b",    "qwen3-30b-a3b", "qwen3-235b-a22b", "glm-4.5-air",
    "glm-4.5",    "glm-5",    "deepseek-v3", "kimi-k2",       "llama-3.1-8b",    "llama-3.1-70b"};

std::string yaml_path(const std::string& name) {
  return repo_path("models/" + name + ".yaml");
}
std::string hf_path(const std::string& name) {
  return repo_path("tests/data/hf/" + name + ".json");
}

ParamInventory yaml_inventory(const std::string& name) {
  return build_inventory(load_model_yaml(yaml_path(name)));
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  return out.str() + "]";
}

std::string parts_str(const std::vector<Partition>& parts) {
  std::ostringstream out;
  for (const Partition& p : parts) out << p.name << ":" << p.rows << " ";
  return out.str();
}

// The first difference between two inventories' tensor lists (model names aside), or "".
std::string inventory_difference(const ParamInventory& a, const ParamInventory& b) {
  const size_t n = std::min(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < n; ++i) {
    const ParamTensor& x = a.tensors[i];
    const ParamTensor& y = b.tensors[i];
    const std::string at = "tensor " + std::to_string(i) + " (" + x.name + "): ";
    if (x.name != y.name) return at + "name differs: " + y.name;
    if (x.shape != y.shape) return at + "shape " + shape_str(x.shape) + " vs " + shape_str(y.shape);
    if (x.rule != y.rule) {
      return at + "rule " + to_string(x.rule) + " vs " + std::string(to_string(y.rule));
    }
    if (parts_str(x.partitions) != parts_str(y.partitions)) {
      return at + "partitions " + parts_str(x.partitions) + "vs " + parts_str(y.partitions);
    }
    if (x.stack_dim != y.stack_dim) return at + "stack_dim differs";
    if (x.mtp != y.mtp) return at + "mtp flag differs";
    if (x.layer != y.layer) return at + "layer differs";
    if (x.routed_expert != y.routed_expert) return at + "routed_expert differs";
  }
  if (a.tensors.size() != b.tensors.size()) {
    return "tensor counts differ: " + std::to_string(a.tensors.size()) + " vs " +
           std::to_string(b.tensors.size());
  }
  return "";
}

const ParamTensor* find(const ParamInventory& inv, const std::string& name) {
  for (const ParamTensor& t : inv.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

UpdateRule rule_of(const ParamInventory& inv, const std::string& name) {
  const ParamTensor* t = find(inv, name);
  INFO(name);
  REQUIRE(t != nullptr);
  return t->rule;
}

int64_t shape_group_total(const InventorySummary& s) {
  int64_t n = 0;
  for (const ShapeGroup& g : s.shape_groups) n += g.count;
  return n;
}

}  // namespace

TEST_CASE("Each bundled YAML spec gives the same inventory as its HF config.json", "[models]") {
  for (const std::string& name : kRealModels) {
    INFO(name);
    const ModelSpec yaml = load_model_yaml(yaml_path(name));
    const ModelSpec hf = import_hf_config(hf_path(name));
    CHECK(yaml.name == name);
    CHECK(hf.name == name);  // the HF import names a model after its file stem
    CHECK(yaml.family == hf.family);
    CHECK(yaml.storage.fused_qkv == false);
    CHECK(yaml.storage.fused_gate_up == false);
    CHECK(yaml.storage.stacked_experts == true);
    const ParamInventory a = build_inventory(yaml);
    const ParamInventory b = build_inventory(hf);
    CHECK(inventory_difference(a, b) == "");
    CHECK(a.mtp_params() == b.mtp_params());
  }
}

TEST_CASE("Bundled YAML specs give the exact published totals", "[models]") {
  CHECK(yaml_inventory("qwen3-30b-a3b").summarize().params_total == 30'532'122'624);
  CHECK(yaml_inventory("glm-4.5-air").summarize().params_total == 106'852'251'264);
  CHECK(yaml_inventory("qwen3-0.6b").summarize().params_total == 596'049'920);
  CHECK(yaml_inventory("llama-3.1-8b").summarize().params_total == 8'030'261'248);
  CHECK(yaml_inventory("llama-3.1-70b").summarize().params_total == 70'553'706'496);
}

TEST_CASE("Bundled YAML specs of the large MoE models are within 0.5% of their sizes", "[models]") {
  CHECK(yaml_inventory("deepseek-v3").summarize().params_total == Approx(671.0e9).epsilon(0.005));
  CHECK(yaml_inventory("kimi-k2").summarize().params_total == Approx(1.026e12).epsilon(0.005));
  CHECK(yaml_inventory("qwen3-235b-a22b").summarize().params_total ==
        Approx(235.1e9).epsilon(0.005));
  CHECK(yaml_inventory("glm-4.5").summarize().params_total == Approx(352.8e9).epsilon(0.005));
  CHECK(yaml_inventory("glm-5").summarize().params_total == Approx(743.9e9).epsilon(0.005));
}

TEST_CASE("MTP layers are listed, flagged and kept out of the totals", "[models]") {
  const ParamInventory air = yaml_inventory("glm-4.5-air");
  CHECK(air.mtp_params() == Approx(2.375e9).epsilon(0.001));
  CHECK(air.summarize(true).params_total == air.summarize(false).params_total + air.mtp_params());
  const ParamTensor* eh = find(air, "model.layers.46.eh_proj.weight");
  REQUIRE(eh != nullptr);
  CHECK(eh->mtp);
  CHECK(eh->rule == UpdateRule::muon);
  CHECK(eh->shape == std::vector<int64_t>{4096, 8192});
  CHECK(find(air, "model.layers.45.eh_proj.weight") == nullptr);
  // MTP tensors come after the main model's.
  bool seen_mtp = false;
  for (const ParamTensor& t : air.tensors) {
    if (seen_mtp) CHECK(t.mtp);
    seen_mtp = seen_mtp || t.mtp;
  }
  CHECK(yaml_inventory("kimi-k2").mtp_params() == 0);
}

TEST_CASE("Qwen3-0.6B ties its embeddings: no lm_head tensor", "[models]") {
  const ParamInventory inv = yaml_inventory("qwen3-0.6b");
  CHECK(find(inv, "lm_head.weight") == nullptr);
  CHECK(find(inv, "model.embed_tokens.weight") != nullptr);
  CHECK(find(yaml_inventory("qwen3-8b"), "lm_head.weight") != nullptr);
}

TEST_CASE("Muon/AdamW routing follows docs/muon-step.md section 1", "[models]") {
  const ParamInventory ds = yaml_inventory("deepseek-v3");
  // Embedding and head: AdamW even though they are matrices.
  CHECK(rule_of(ds, "model.embed_tokens.weight") == UpdateRule::adamw);
  CHECK(rule_of(ds, "lm_head.weight") == UpdateRule::adamw);
  // Norm gains: AdamW.
  CHECK(rule_of(ds, "model.norm.weight") == UpdateRule::adamw);
  CHECK(rule_of(ds, "model.layers.0.input_layernorm.weight") == UpdateRule::adamw);
  CHECK(rule_of(ds, "model.layers.0.self_attn.q_a_layernorm.weight") == UpdateRule::adamw);
  CHECK(rule_of(ds, "model.layers.0.self_attn.kv_a_layernorm.weight") == UpdateRule::adamw);
  // MLA projections and the dense MLP: Muon.
  for (const char* n : {"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"}) {
    CHECK(rule_of(ds, "model.layers.0.self_attn." + std::string(n) + ".weight") ==
          UpdateRule::muon);
  }
  CHECK(rule_of(ds, "model.layers.0.mlp.gate_proj.weight") == UpdateRule::muon);
  // Layers 0-2 are dense, layer 3 is the first MoE layer.
  CHECK(find(ds, "model.layers.2.mlp.gate.weight") == nullptr);
  // The router weight is a matrix: Muon; its score-correction bias: AdamW.
  const ParamTensor* router = find(ds, "model.layers.3.mlp.gate.weight");
  REQUIRE(router != nullptr);
  CHECK(router->rule == UpdateRule::muon);
  CHECK(router->shape == std::vector<int64_t>{256, 7168});
  CHECK(router->stack_dim == -1);
  CHECK(rule_of(ds, "model.layers.3.mlp.gate.e_score_correction_bias") == UpdateRule::adamw);
  // Expert stacks: [E, out, in], stack_dim 0, Muon, split over EP ranks.
  const ParamTensor* gate = find(ds, "model.layers.3.mlp.experts.gate_proj");
  const ParamTensor* down = find(ds, "model.layers.3.mlp.experts.down_proj");
  REQUIRE(gate != nullptr);
  REQUIRE(down != nullptr);
  CHECK(gate->shape == std::vector<int64_t>{256, 2048, 7168});
  CHECK(down->shape == std::vector<int64_t>{256, 7168, 2048});
  for (const ParamTensor* t : {gate, down}) {
    CHECK(t->rule == UpdateRule::muon);
    CHECK(t->stack_dim == 0);
    CHECK(t->routed_expert);
    CHECK(t->muon_matrix_count() == 256);
  }
  // The shared expert is an ordinary MLP.
  const ParamTensor* shared = find(ds, "model.layers.3.mlp.shared_experts.up_proj.weight");
  REQUIRE(shared != nullptr);
  CHECK(shared->shape == std::vector<int64_t>{2048, 7168});
  CHECK(shared->stack_dim == -1);
  CHECK_FALSE(shared->routed_expert);

  // Biases: AdamW (GLM-4.5-Air has q/k/v biases, none on o_proj).
  const ParamInventory air = yaml_inventory("glm-4.5-air");
  for (const char* n : {"q_proj", "k_proj", "v_proj"}) {
    CHECK(rule_of(air, "model.layers.0.self_attn." + std::string(n) + ".bias") ==
          UpdateRule::adamw);
  }
  CHECK(find(air, "model.layers.0.self_attn.o_proj.bias") == nullptr);
  // Qwen3 q/k norms: AdamW.
  const ParamInventory qwen = yaml_inventory("qwen3-30b-a3b");
  CHECK(rule_of(qwen, "model.layers.0.self_attn.q_norm.weight") == UpdateRule::adamw);
  CHECK(rule_of(qwen, "model.layers.0.mlp.gate.weight") == UpdateRule::muon);
  CHECK(find(qwen, "model.layers.0.mlp.gate.e_score_correction_bias") == nullptr);
  // GLM-5's DSA indexer: projections Muon, its LayerNorm gain and bias AdamW.
  const ParamInventory glm5 = yaml_inventory("glm-5");
  CHECK(rule_of(glm5, "model.layers.0.self_attn.indexer.wq_b.weight") == UpdateRule::muon);
  CHECK(rule_of(glm5, "model.layers.0.self_attn.indexer.k_norm.bias") == UpdateRule::adamw);

  // Every 1-D tensor is AdamW; every Muon tensor is 2-D or a stack.
  for (const std::string& name : kRealModels) {
    INFO(name);
    for (const ParamTensor& t : yaml_inventory(name).tensors) {
      if (t.shape.size() == 1) CHECK(t.rule == UpdateRule::adamw);
      if (t.rule == UpdateRule::muon) CHECK(t.shape.size() == (t.stack_dim == 0 ? 3u : 2u));
    }
  }
}

TEST_CASE("Shape groups add up to the Muon matrix count", "[models]") {
  std::vector<std::string> all = kRealModels;
  all.push_back("tiny-dense");
  all.push_back("tiny-moe");
  for (const std::string& name : all) {
    INFO(name);
    const ParamInventory inv = yaml_inventory(name);
    for (bool mtp : {false, true}) {
      const InventorySummary s = inv.summarize(mtp);
      CHECK(shape_group_total(s) == s.muon_matrices);
      CHECK(s.params_muon + s.params_adamw == s.params_total);
    }
  }
}

TEST_CASE("Tiny executor test models: fused partitions and rows that 3, 4, 8 do not divide",
          "[models]") {
  for (const std::string& name : std::vector<std::string>{"tiny-dense", "tiny-moe"}) {
    INFO(name);
    const ModelSpec spec = load_model_yaml(yaml_path(name));
    CHECK(spec.name == name);
    CHECK(spec.storage.fused_qkv);
    CHECK(spec.storage.fused_gate_up);
    const ParamInventory inv = build_inventory(spec);
    const InventorySummary s = inv.summarize();
    CHECK(s.params_total > 1'000'000);
    CHECK(s.params_total < 10'000'000);

    int64_t matrices = 0;
    for (const ParamTensor& t : inv.tensors) {
      matrices += t.rule == UpdateRule::muon
                      ? t.stack_count() * static_cast<int64_t>(t.muon_partitions().size())
                      : 0;
      for (const char* separate : {".q_proj", ".k_proj", ".v_proj", ".gate_proj", ".up_proj"}) {
        CHECK(t.name.find(separate) == std::string::npos);  // fused: no separate q/k/v, gate/up
      }
      if (t.rule != UpdateRule::muon) continue;
      INFO(t.name);
      std::vector<int64_t> rows = {t.rows()};
      for (const Partition& p : t.muon_partitions()) rows.push_back(p.rows);
      for (int64_t r : rows) {
        INFO("rows " << r);
        CHECK(r % 3 != 0);
        CHECK(r % 4 != 0);
        CHECK(r % 8 != 0);
      }
      int64_t partition_rows = 0;
      for (const Partition& p : t.muon_partitions()) partition_rows += p.rows;
      CHECK(partition_rows == t.rows());
      if (t.name.find("qkv_proj") != std::string::npos) {
        REQUIRE(t.partitions.size() == 3);
        CHECK(t.partitions[0].name == "q");
        CHECK(t.partitions[1].name == "k");
        CHECK(t.partitions[2].name == "v");
        CHECK(t.partitions[1].rows == t.partitions[2].rows);
      }
      if (t.name.find("gate_up_proj") != std::string::npos) {
        REQUIRE(t.partitions.size() == 2);
        CHECK(t.partitions[0].name == "gate");
        CHECK(t.partitions[1].name == "up");
        CHECK(t.partitions[0].rows == t.partitions[1].rows);
      }
    }
    CHECK(s.muon_matrices == matrices);
    CHECK(find(inv, "model.layers.0.self_attn.qkv_proj.weight") != nullptr);
  }

  const ParamInventory moe = yaml_inventory("tiny-moe");
  const ModelSpec spec = load_model_yaml(yaml_path("tiny-moe"));
  const int64_t e = spec.moe.num_experts;
  CHECK(e % 3 != 0);
  CHECK(e % 4 != 0);
  CHECK(e % 8 != 0);
  CHECK(spec.moe.num_shared_experts > 0);
  CHECK(spec.moe.first_dense_layers == 1);
  CHECK(spec.moe.router_bias);
  // Layer 0 is dense, layer 1 MoE with a router bias, fused expert stacks and a shared expert.
  CHECK(find(moe, "model.layers.0.mlp.gate_up_proj.weight") != nullptr);
  CHECK(find(moe, "model.layers.0.mlp.gate.weight") == nullptr);
  CHECK(rule_of(moe, "model.layers.1.mlp.gate.weight") == UpdateRule::muon);
  CHECK(rule_of(moe, "model.layers.1.mlp.gate.e_score_correction_bias") == UpdateRule::adamw);
  const ParamTensor* stack = find(moe, "model.layers.1.mlp.experts.gate_up_proj");
  REQUIRE(stack != nullptr);
  CHECK(stack->stack_dim == 0);
  CHECK(stack->shape[0] == e);
  CHECK(stack->partitions.size() == 2);
  CHECK(stack->muon_matrix_count() == 2 * e);
  CHECK(find(moe, "model.layers.1.mlp.shared_experts.gate_up_proj.weight") != nullptr);
}

TEST_CASE("load_model picks the loader by content", "[models]") {
  for (const std::string& name : std::vector<std::string>{"glm-4.5-air", "qwen3-0.6b"}) {
    INFO(name);
    const ModelSpec from_yaml = load_model(yaml_path(name));
    const ModelSpec from_hf = load_model(hf_path(name));
    CHECK(from_yaml.name == name);
    CHECK(from_hf.name == name);
    CHECK(inventory_difference(build_inventory(from_yaml),
                               build_inventory(load_model_yaml(yaml_path(name)))) == "");
    CHECK(inventory_difference(build_inventory(from_hf),
                               build_inventory(import_hf_config(hf_path(name)))) == "");
    CHECK(inventory_difference(build_inventory(from_yaml), build_inventory(from_hf)) == "");
  }
  // Our YAML spec is never mistaken for a config.json, nor the other way round.
  CHECK_THROWS_AS(import_hf_config(yaml_path("tiny-dense")), InputError);
  CHECK_THROWS_AS(load_model_yaml(hf_path("llama-3.1-8b")), InputError);
}

TEST_CASE("An HF config named config.json takes its name from _name_or_path", "[models]") {
  const std::string body =
      R"("model_type": "llama", "vocab_size": 1000, "hidden_size": 256,
         "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 512)";
  CHECK(parse_hf_config("{" + body + "}", "some/dir/llama-tiny.json").name == "llama-tiny");
  CHECK(parse_hf_config("{" + body + "}", "some/dir/config.json").name == "llama");
  CHECK(parse_hf_config(R"({"_name_or_path": "meta-llama/Llama-3.1-8B", )" + body + "}",
                        "some/dir/config.json")
            .name == "Llama-3.1-8B");
  CHECK(parse_hf_config(R"({"_name_or_path": "/ckpt/my-model/", )" + body + "}", "config.json")
            .name == "my-model");
}

TEST_CASE("element counts beyond int64 are refused, not wrapped", "[model_yaml]") {
  // [1e5, 1e8, 1e8] expert stacks: every field within its bound, the product past 2^63.
  const std::string yaml =
      "name: x\nvocab_size: 10\nhidden_size: 100000000\nnum_layers: 1\n"
      "attention:\n  num_heads: 1\nmoe:\n  num_experts: 100000\n  intermediate_size: 100000000\n";
  CHECK_THROWS_WITH(parse_model_yaml(yaml, "x.yaml"),
                    "x.yaml: model: 3000040010T parameters, more than muonplan plans for (1000T)");
}

TEST_CASE("model tensors are bounded as plan tensors are", "[model_yaml]") {
  // heads x head_dim past 10^8 rows: each field within its bound, the product not.
  const std::string yaml =
      "name: x\nvocab_size: 10\nhidden_size: 1000\nnum_layers: 1\n"
      "attention:\n  num_heads: 20000\n  head_dim: 10000\n  num_kv_heads: 1\n"
      "mlp:\n  intermediate_size: 10\n";
  CHECK(error_of([&] { parse_model_yaml(yaml, "m.yaml"); }).find("m.yaml: model: tensor ") == 0);
  CHECK(error_of([&] {
          parse_model_yaml(yaml, "m.yaml");
        }).find("has a dimension of 200000000, more than muonplan plans for (100000000)") !=
        std::string::npos);
}
