#include "muonplan/plan_options.h"

#include "muonplan/error.h"
#include "muonplan/io.h"
#include "muonplan/yaml_reader.h"

namespace muonplan {

OffloadMode parse_offload(const std::string& name) {
  if (name == "none") return OffloadMode::none;
  if (name == "optimizer") return OffloadMode::optimizer;
  if (name == "full") return OffloadMode::full;
  throw InputError({}, "--offload", "expected none, optimizer, full or auto, got '" + name + "'");
}

OptimizerKind parse_optimizer(const std::string& name) {
  if (name == "muon") return OptimizerKind::muon;
  if (name == "adamw") return OptimizerKind::adamw;
  if (name == "signsgd") return OptimizerKind::signsgd;
  throw InputError({}, "--optimizer", "expected muon, adamw or signsgd, got '" + name + "'");
}

const char* to_string(OffloadMode m) {
  return m == OffloadMode::none ? "none" : m == OffloadMode::optimizer ? "optimizer" : "full";
}

const char* to_string(OptimizerKind k) {
  return k == OptimizerKind::muon ? "muon" : k == OptimizerKind::adamw ? "adamw" : "signsgd";
}

CpStyle parse_cp_style(const std::string& name) {
  if (name == "ulysses") return CpStyle::ulysses;
  if (name == "ring") return CpStyle::ring;
  throw InputError({}, "--cp-style", "expected ulysses or ring, got '" + name + "'");
}

const char* to_string(CpStyle s) {
  return s == CpStyle::ring ? "ring" : "ulysses";
}

Workload load_workload(const std::string& path) {
  const detail::YamlMap m(detail::parse_yaml_text(read_input_file(path), path), path, "");
  Workload w;
  w.tokens_per_step = m.get_int("tokens_per_step");
  w.seq_len = m.get_int("seq_len");
  w.micro_batch_seqs = m.get_int("micro_batch_seqs", 1);
  const std::string ac = m.get_string("ac", "full");
  if (ac != "full" && ac != "none") m.fail("ac", "expected full or none, got '" + ac + "'");
  w.ac_full = ac == "full";
  w.ac_offload = m.get_bool("ac_offload", false);
  w.lm_head_chunk = m.get_int("lm_head_chunk", 0);
  if (w.lm_head_chunk < 0) m.fail("lm_head_chunk", "must not be negative (0: unfused)");
  const std::string cp_style = m.get_string("cp_style", "ulysses");
  if (cp_style != "ulysses" && cp_style != "ring")
    m.fail("cp_style", "expected ulysses or ring, got '" + cp_style + "'");
  w.cp_style = cp_style == "ring" ? CpStyle::ring : CpStyle::ulysses;
  for (const char* key : {"tokens_per_step", "seq_len", "micro_batch_seqs"}) {
    if (m.get_int(key, 1) <= 0) m.fail(key, "must be positive");
  }
  if (w.tokens_per_step % w.seq_len != 0) {
    m.fail("tokens_per_step", "must be a multiple of seq_len (" + std::to_string(w.seq_len) + ")");
  }
  m.check_known({"tokens_per_step", "seq_len", "micro_batch_seqs", "ac", "ac_offload",
                 "lm_head_chunk", "cp_style"});
  return w;
}

}  // namespace muonplan
