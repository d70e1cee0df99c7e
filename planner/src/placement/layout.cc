#include "muonplan/planner/layout.h"

#include <limits>
#include <sstream>

#include "muonplan/base/error.h"
#include "muonplan/base/parse_int.h"

namespace muonplan {
namespace {

[[noreturn]] void bad(const std::string& message) {
  throw InputError({}, "--layout", message);
}

}  // namespace

Layout parse_layout(const std::string& text) {
  Layout layout;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos)
      bad("expected key=value items like fsdp=8,ep=8, got '" + brief(item) + "'");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    const std::optional<int64_t> parsed =
        parse_int(value, std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
    if (!parsed) bad(key + " must be an integer, got '" + brief(value) + "'");
    const int v = static_cast<int>(*parsed);
    if (v <= 0) bad(key + " must be positive, got " + value);
    if (key == "fsdp") {
      layout.fsdp = v;
    } else if (key == "cp") {
      layout.cp = v;
    } else if (key == "ep") {
      layout.ep = v;
    } else {
      bad("unknown key '" + key + "' (known: fsdp, cp, ep)");
    }
  }
  return layout;
}

Layout resolve_layout(const Layout& in, int world, const ModelSpec& spec) {
  Layout l = in;
  if (l.fsdp == 0) l.fsdp = world;
  const std::string w = std::to_string(world);
  if (world % l.fsdp != 0) bad("fsdp=" + std::to_string(l.fsdp) + " does not divide world " + w);
  if (l.fsdp % l.cp != 0) {
    bad("cp=" + std::to_string(l.cp) + " does not divide fsdp=" + std::to_string(l.fsdp) +
        " (the FSDP group includes the CP ranks)");
  }
  if (world % l.ep != 0) bad("ep=" + std::to_string(l.ep) + " does not divide world " + w);
  // The expert mesh lies inside the shard group, as prime-rl's (dp_shard_cp x ep): experts are
  // sharded over fsdp ranks and replicated across the world / fsdp groups (shards.h).
  if (l.fsdp % l.ep != 0) {
    bad("ep=" + std::to_string(l.ep) + " does not divide fsdp=" + std::to_string(l.fsdp) +
        " (the experts are sharded inside the FSDP group and replicated across its replicas; "
        "prime-rl needs (dp_shard x cp) % ep == 0)");
  }
  if (l.ep > 1 && spec.moe.num_experts == 0)
    bad("ep=" + std::to_string(l.ep) + " needs an MoE model");
  if (l.ep > spec.moe.num_experts && spec.moe.num_experts > 0) {
    bad("ep=" + std::to_string(l.ep) + " exceeds the " + std::to_string(spec.moe.num_experts) +
        " routed experts");
  }
  return l;
}

Range local_range(const ParamTensor& t, const Layout& layout, int world, int rank) {
  return shard_rule(t, layout, world).range(t.shape[0], rank);
}

Placement place(const ParamTensor& t, const Layout& layout, int world) {
  Placement p;
  p.kind = shard_kind(t, layout);
  p.group_size = layout.fsdp;  // expert stacks too: ep x (fsdp / ep), alike in each replica
  p.local.resize(p.group_size);
  for (int r = 0; r < p.group_size; ++r) p.local[r] = local_range(t, layout, world, r);
  return p;
}

}  // namespace muonplan
