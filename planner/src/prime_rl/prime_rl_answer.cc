// The answer to a prime-rl config (prime_rl.h): the alternatives' sweep under prime-rl's rules,
// and the keys of the config that turn it into each alternative.
#include "prime_rl/prime_rl_answer.h"
#include "muonplan/planner/layout.h"
#include "muonplan/planner/prime_rl.h"
#include "prime_rl/prime_rl_rules.h"
#include "prime_rl/trainer_config_in.h"
#include "prime_rl/trainer_keys.h"

namespace muonplan {
namespace {

// The era the keys are named for: --prime-rl-version's date ("" the newest), and whether
// the file uses the older SFT [deployment] names (num_nodes, num_gpus) without a date.
struct Era {
  std::string date;
  bool sft = false, older_names = false;
  std::string missing;  // why the era has no key for a change (the first one)
};
thread_local Era era;

std::string line(const std::string& table, bool top_level, const std::string& key,
                 const std::string& value) {
  trainer_key(table, key);  // a key of the table every reader and writer shares
  std::string dated = prime_rl_key_on(table, key, era.sft, era.date);
  if (era.date.empty() && era.older_names && table == "deployment")
    dated = prime_rl_key_on(table, key, era.sft, "2026-08-16");  // the file's own names
  const std::string head = "[" + prime_rl_table(table, top_level) + "] ";
  if (dated.empty()) {
    const std::string why = "prime-rl of " + era.date + " has no such key";
    if (era.missing.empty()) era.missing = head + key + ": " + why;
    return head + key + " = " + value + " (" + why + ")";
  }
  trainer_key(table, dated);
  return head + dated + " = " + value;
}

// Where the candidate's world differs from the file's: a one-node file's GPUs in that node, a
// multi-node file's nodes (one node is num_train_nodes = 1 there: an RL single node shares its
// GPUs with inference), or a trainer file's torchrun flags.
void world_keys(const TrainerConfig& tc, const Plan& written, const Candidate& c, int gpn,
                std::vector<std::string>& out) {
  const bool sft = tc.top_level();
  if (c.nodes == written.options.nodes && gpn == written.gpus_per_node) return;
  if (tc.standalone) {
    out.push_back("torchrun --nnodes " + std::to_string(c.nodes) + " --nproc-per-node " +
                  std::to_string(gpn) + " (the world is not in a trainer file)");
    return;
  }
  // The local launcher's trainer_gpu_ids (before [deployment]): its GPUs on one node, no key
  // for more nodes (the writer's set_gpu_ids takes the first ids inference leaves).
  const FileValue* ids = tc.value("nodes");
  if (ids && ids->shown.rfind("trainer_gpu_ids", 0) == 0) {
    trainer_key("", "trainer_gpu_ids");
    out.push_back("(top level) trainer_gpu_ids = " + std::to_string(gpn) + " GPU ids");
    if (c.nodes > 1 && era.missing.empty())
      era.missing = "trainer_gpu_ids: the local launcher runs one node";
    return;
  }
  if (tc.single_node && c.nodes == 1) {
    out.push_back(line("deployment", sft, "num_train_gpus", std::to_string(gpn)));
    return;
  }
  if (tc.world_table != "deployment") {  // a launcher-era file: its own keys, no [deployment]
    const std::string at = tc.world_table.empty() ? "(top level) " : "[slurm] ";
    trainer_key(tc.world_table, "num_train_nodes");
    out.push_back(at + "num_train_nodes = " + std::to_string(c.nodes));
    return;
  }
  if (tc.single_node) out.push_back(line("deployment", sft, "type", "\"multi_node\""));
  out.push_back(line("deployment", sft, "num_train_nodes", std::to_string(c.nodes)));
  if (tc.single_node) out.push_back(line("deployment", sft, "gpus_per_node", std::to_string(gpn)));
}

}  // namespace

std::vector<std::string> keys_to_change(const TrainerConfig& tc, const ModelSpec& spec,
                                        const Plan& written, const Candidate& c, int gpus_per_node,
                                        const std::string& date, std::string* inexpressible) {
  std::vector<std::string> out;
  era.date = date;
  era.missing.clear();
  era.sft = tc.sft;
  era.older_names = false;
  for (const char* flag : {"nodes", "gpus-per-node"}) {
    const FileValue* v = tc.value(flag);
    if (v && (v->shown.rfind("deployment.num_nodes ", 0) == 0 ||
              v->shown.rfind("deployment.num_gpus ", 0) == 0))
      era.older_names = true;
  }
  const bool sft = tc.top_level();
  const int gpn = gpus_per_node > 0 ? gpus_per_node : written.gpus_per_node;
  const int world = c.nodes * gpn;
  world_keys(tc, written, c, gpn, out);
  const Layout l = parse_layout(c.layout);
  const int dpr = world / l.fsdp;
  if (dpr != written.world / written.options.layout.fsdp) {
    if (tc.fsdp_group_key) {
      out.push_back(line("deployment", sft, "nodes_per_fsdp_group", std::to_string(c.nodes / dpr)));
    } else {
      out.push_back(line("model", sft, "dp_replicate", std::to_string(dpr)));
    }
  } else if (tc.fsdp_group_key && c.nodes != written.options.nodes) {
    out.push_back(line("deployment", sft, "nodes_per_fsdp_group", std::to_string(c.nodes / dpr)));
  }
  if (l.cp != written.options.layout.cp)
    out.push_back(line("model", sft, "cp", std::to_string(l.cp)));
  const int ep_now = tc.ep > 0 ? tc.ep : tc.resolved_ep(spec, world);
  if (l.ep != ep_now) out.push_back(line("model", sft, "ep", std::to_string(l.ep)));
  if (c.offload != written.options.offload) {
    // The two keys' values under each mode (optim_cpu_offload defaults to true, so it is
    // written whenever it must be false); only those that change are listed.
    auto optim = [](OffloadMode m) { return m == OffloadMode::optimizer; };
    auto full = [](OffloadMode m) { return m == OffloadMode::full; };
    const FileValue* written_by = tc.value("offload");
    const bool by_fsdp =
        written_by && written_by->shown.find("fsdp_cpu_offload") != std::string::npos;
    if (optim(c.offload) != optim(written.options.offload))
      out.push_back(line("model", sft, "optim_cpu_offload", optim(c.offload) ? "true" : "false"));
    if (by_fsdp) {
      out.push_back(line("model", sft, "fsdp_cpu_offload", "false"));
      if (full(c.offload)) out.push_back(line("model", sft, "full_offload", "true"));
    } else if (full(c.offload) != full(written.options.offload)) {
      out.push_back(line("model", sft, "full_offload", full(c.offload) ? "true" : "false"));
    }
  }
  if (inexpressible) *inexpressible = era.missing;
  return out;
}

TrainerAnswer trainer_answer(const ModelSpec& spec, const Topology& topo, const PlanInputs& in,
                             const Plan& written) {
  const TrainerConfig& tc = *in.trainer;
  // A one-node file with GPUs to spare tries more of them in that node first.
  const int one_node_gpus = tc.single_node ? tc.node_gpus - tc.infer_gpus : 0;
  // The rules of the config's prime-rl (--prime-rl-version): no full offload before it existed.
  const RuntimeRules& rules = in.request.rules ? *in.request.rules : prime_rl_rules();
  TrainerAnswer a = best_alternatives(spec, topo, in.request, written, rules, one_node_gpus);
  // An alternative the file's era has no keys for (a world before [deployment] where the file
  // names no launcher world, more nodes than trainer_gpu_ids runs) is not offered: no config of
  // that era could say it (docs/trainer-config.md, "The answer").
  std::vector<Alternative> kept;
  for (Alternative& alt : a.alternatives) {
    std::string missing;
    alt.keys = keys_to_change(tc, spec, written, alt.candidate, alt.gpus_per_node,
                              in.flags.prime_rl_version, &missing);
    if (missing.empty()) kept.push_back(std::move(alt));
  }
  a.alternatives = std::move(kept);
  return a;
}

}  // namespace muonplan
