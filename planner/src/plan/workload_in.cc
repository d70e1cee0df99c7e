// The workload file (docs/planner.md, "Workload"): YAML with the fields of Workload by name.
#include "muonplan/base/error.h"
#include "muonplan/base/io.h"
#include "muonplan/planner/workload.h"
#include "muonplan/planner/yaml_reader.h"

namespace muonplan {

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
  const std::optional<CpStyle> style = enum_from_name(kCpStyleNames, cp_style);
  if (!style) {
    m.fail("cp_style",
           "expected " + choices_text(enum_names(kCpStyleNames)) + ", got '" + cp_style + "'");
  }
  w.cp_style = *style;
  const std::string attention = m.get_string("attention", "auto");
  const std::optional<AttentionKernel> kernel = enum_from_name(kAttentionKernelNames, attention);
  if (!kernel) {
    m.fail("attention", "expected " + choices_text(enum_names(kAttentionKernelNames)) + ", got '" +
                            attention + "'");
  }
  w.attention = *kernel;
  for (const char* key : {"tokens_per_step", "seq_len", "micro_batch_seqs"}) {
    if (m.get_int(key, 1) <= 0) m.fail(key, "must be positive");
  }
  if (w.tokens_per_step % w.seq_len != 0) {
    m.fail("tokens_per_step", "must be a multiple of seq_len (" + std::to_string(w.seq_len) + ")");
  }
  m.check_known({"tokens_per_step", "seq_len", "micro_batch_seqs", "ac", "ac_offload",
                 "lm_head_chunk", "cp_style", "attention"});
  return w;
}

}  // namespace muonplan
