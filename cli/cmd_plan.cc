// muonplan plan: choose nodes and offload mode for a model on a topology, print the decision
// and the predicted costs (or the trainer settings they imply), write the Plan JSON.
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "muonplan/error.h"
#include "muonplan/io.h"
#include "muonplan/model_io.h"
#include "muonplan/plan.h"
#include "muonplan/trace.h"
#include "muonplan/trainer_config.h"
#include "muonplan/units.h"
#include "paths.h"

namespace muonplan::cli {
namespace {

void print_terms(const char* title, const std::vector<Term>& terms, double scale,
                 const char* unit) {
  if (terms.empty()) return;
  std::printf("  %s\n", title);
  for (const Term& t : terms) {
    std::printf("    %-30s %12.4f %-4s %s\n", t.name.c_str(), t.value / scale, unit,
                t.formula.c_str());
  }
}

void print_plan(const Plan& plan, bool explain) {
  const PlanOptions& o = plan.options;
  const Prediction& p = plan.predicted;
  std::printf("muonplan plan: %s on %s (%d GPUs per node), optimizer %s, owners %s\n",
              plan.model_name.c_str(), plan.topology_name.c_str(), plan.gpus_per_node,
              to_string(o.optimizer), to_string(o.owners));
  std::printf("limits: GPU %.1f GiB, host RAM %.0f GiB per node\n\n", p.gpu_limit_bytes / kGiB,
              p.host_limit_bytes / kGiB);
  // The layout column appears when the search tried more than one layout.
  bool layouts_vary = false;
  for (const Candidate& c : plan.candidates) {
    layouts_vary = layouts_vary || (!c.layout.empty() && c.layout != to_string(o.layout));
  }
  const std::string chosen_layout = to_string(o.layout);
  auto layout_cell = [&](const Candidate& c) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%-20s  ", c.layout.empty() ? "-" : c.layout.c_str());
    return layouts_vary ? std::string(buf) : std::string();
  };
  std::printf("%5s  %s%-9s  %-4s  %12s  %14s  %10s  %10s\n", "nodes",
              layouts_vary ? "layout                " : "", "offload", "fits", "GPU peak GiB",
              "host GiB/node", "step s", "GPU-s");
  for (const Candidate& c : plan.candidates) {
    if (!c.evaluated) {
      std::printf("%5d  %s%-9s  %-4s  %s\n", c.nodes, layout_cell(c).c_str(), to_string(c.offload),
                  "-", c.note.c_str());
      continue;
    }
    const bool chosen = c.nodes == o.nodes && c.offload == o.offload && c.layout == chosen_layout;
    std::printf("%5d  %s%-9s  %-4s  %12.1f  %14.1f  %10.3f  %10.2f%s\n", c.nodes,
                layout_cell(c).c_str(), to_string(c.offload), c.fits ? "yes" : "no", c.gpu_peak_gib,
                c.host_ram_per_node_gib, c.step_s, c.gpu_seconds, chosen ? "  <- chosen" : "");
  }
  std::printf("\ndecision: %s%s\n", plan.fits ? "" : "NO FIT: ", plan.reason.c_str());
  std::printf("chosen: %d node(s) x %d GPUs, layout %s, offload %s\n", o.nodes, plan.gpus_per_node,
              to_string(o.layout).c_str(), to_string(o.offload));
  std::printf("  GPU peak %.2f GiB (step transient %.2f GiB), host RAM %.1f GiB per node\n",
              p.gpu_peak_bytes() / kGiB, p.gpu_transient_bytes_total() / kGiB,
              p.host_bytes() / kGiB);
  std::printf("  all-to-all %.3f GB per rank (max), H2D %.2f GB, D2H %.2f GB per GPU\n",
              p.alltoall_bytes_per_rank_max / kGB, p.h2d_bytes_per_gpu / kGB,
              p.d2h_bytes_per_gpu / kGB);
  std::printf("  optimizer step %.3f s", p.optimizer_step_s);
  if (p.training_step_s) std::printf(", training step %.3f s", *p.training_step_s);
  std::printf("\n");
  if (!explain) {
    std::printf("(--explain prints every term; --json the full plan)\n");
    return;
  }
  std::printf("\nterms (busiest rank / node):\n");
  print_terms("GPU persistent", p.gpu_persistent_bytes, kGiB, "GiB");
  print_terms("GPU step transient", p.gpu_transient_bytes, kGiB, "GiB");
  print_terms("GPU fixed", p.gpu_fixed_bytes, kGiB, "GiB");
  print_terms("GPU workload", p.gpu_workload_bytes, kGiB, "GiB");
  print_terms("host RAM per node", p.host_bytes_per_node, kGiB, "GiB");
  print_terms("traffic per GPU per step", p.comm_bytes, kGB, "GB");
  print_terms("optimizer step", p.step_phases_s, 1, "s");
  print_terms("training step", p.training_terms_s, 1, "s");
  print_terms("training step, under compute (not in the sum)", p.training_hidden_s, 1, "s");
}

struct PlanCommand {
  std::string model, topology = default_topology_path(), out, emit, trace;
  PlanFlags flags;
  bool json = false, explain = false;
};

}  // namespace

Runner add_plan(CLI::App& app) {
  auto f = std::make_shared<PlanCommand>();
  CLI::App* c = app.add_subcommand("plan", "Choose node count and offload mode; predict costs");
  c->add_option("--model", f->model, "YAML model spec or Hugging Face config.json")
      ->required()
      ->check(non_empty_path());
  c->add_option("--topology", f->topology, "Cluster description (YAML)")
      ->capture_default_str()
      ->check(non_empty_path());
  add_plan_flags(c, f->flags, true);
  c->add_flag("--json", f->json, "Print the plan as JSON");
  c->add_flag("--explain", f->explain, "Print every named term");
  c->add_option("--emit", f->emit, "toml: print the trainer settings the plan implies");
  c->add_option("--out", f->out, "Write the plan JSON to this file")->check(non_empty_path());
  c->add_option("--trace", f->trace,
                "Write the predicted step as Chrome trace-event JSON (Perfetto, chrome://tracing)")
      ->check(non_empty_path());
  return [f]() {
    refuse_overlaps(plan_inputs(f->model, f->topology, f->flags),
                    {{"--out", f->out}, {"--trace", f->trace}});
    if (!f->emit.empty() && f->emit != "toml") {
      throw InputError({}, "--emit", "expected toml, got '" + f->emit + "'");
    }
    if (!f->emit.empty() && f->json) {
      throw InputError({}, "--emit", "prints instead of --json; give one of them");
    }
    const ModelSpec spec = load_model(f->model);
    const Topology topo = load_topology(f->topology);
    const Plan plan = make_plan(spec, topo, to_plan_request(f->flags));
    const nlohmann::json j = plan_to_json(plan);
    // Everything that can fail comes before --out is written: a failed plan leaves it as it was.
    const std::string toml = f->emit == "toml" ? trainer_config_toml(j) : "";
    if (!f->out.empty()) write_file_atomic(f->out, j.dump(1) + "\n");
    if (!f->trace.empty()) write_file_atomic(f->trace, predicted_trace(plan).dump(1) + "\n");
    if (f->emit == "toml") {
      std::cout << toml;
    } else if (f->json) {
      std::cout << j.dump(2) << "\n";
    } else {
      print_plan(plan, f->explain);
    }
    return 0;
  };
}

}  // namespace muonplan::cli
