// muonplan inspect: the parameter inventory of a model spec or HF config.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "muonplan/base/error.h"
#include "muonplan/planner/inventory.h"
#include "muonplan/planner/json_forms.h"
#include "muonplan/planner/model_io.h"
#include "muonplan/planner/model_resolve.h"

namespace muonplan::cli {
namespace {

struct InspectOptions {
  std::string model;
  bool json = false;
  bool include_mtp = false;
  bool tensors = false;
  bool list = false;
};

// --list: the bundled specs, by the short name --model takes, with the HF id each stands for.
void print_bundled() {
  std::printf("%-20s %s\n", "name", "hf_id");
  for (const BundledModel& b : bundled_models()) {
    std::printf("%-20s %s\n", b.name.c_str(), b.hf_id.empty() ? "-" : b.hf_id.c_str());
  }
}

void print_table(const ParamInventory& inv, const InventorySummary& s, bool include_mtp) {
  std::printf("model %s\n", inv.model_name.c_str());
  std::printf("  params total   %20s%s\n", with_commas(s.params_total).c_str(),
              include_mtp ? "  (MTP included)" : "");
  std::printf("    muon         %20s  (%.1f%%)\n", with_commas(s.params_muon).c_str(),
              100.0 * s.params_muon / s.params_total);
  std::printf("    adamw        %20s  (%.1f%%)\n", with_commas(s.params_adamw).c_str(),
              100.0 * s.params_adamw / s.params_total);
  if (inv.mtp_params() > 0) {
    std::printf("  MTP layers     %20s  (%s)\n", with_commas(inv.mtp_params()).c_str(),
                include_mtp ? "included above" : "not in the totals; --include-mtp adds them");
  }
  std::printf("  tensors %lld, muon matrices %lld (stacks and partitions split)\n",
              static_cast<long long>(s.tensors), static_cast<long long>(s.muon_matrices));
  std::printf("  %8s %8s %8s\n", "rows", "cols", "count");
  for (const ShapeGroup& g : s.shape_groups) {
    std::printf("  %8lld %8lld %8lld\n", static_cast<long long>(g.rows),
                static_cast<long long>(g.cols), static_cast<long long>(g.count));
  }
}

}  // namespace

Runner add_inspect(CLI::App& app) {
  auto opts = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand("inspect", "Print a model's parameter inventory");
  cmd->add_option("--model", opts->model,
                  "YAML spec, config.json or its directory, bundled name, or Hugging Face id");
  cmd->add_flag("--list", opts->list, "List the bundled models and their Hugging Face ids");
  cmd->add_flag("--json", opts->json, "Machine-readable output on stdout");
  cmd->add_flag("--include-mtp", opts->include_mtp, "Count multi-token-prediction layers");
  cmd->add_flag("--tensors", opts->tensors, "With --json: list every tensor");
  return [opts]() {
    if (opts->list) {
      print_bundled();
      return 0;
    }
    if (opts->model.empty()) throw InputError({}, "--model", "is required (or --list)");
    const ParamInventory inv = build_inventory(resolve_model(opts->model, {}, "--model").spec);
    const InventorySummary s = inv.summarize(opts->include_mtp);
    if (opts->json) {
      std::cout << inventory_to_json(inv, opts->include_mtp, opts->tensors).dump(2) << "\n";
    } else {
      print_table(inv, s, opts->include_mtp);
    }
    return 0;
  };
}

}  // namespace muonplan::cli
