// The workload file (docs/planner.md, "Workload"): YAML with the fields of Workload by name.
#include "muonplan/base/error.h"
#include "muonplan/base/io.h"
#include "muonplan/planner/workload.h"
#include "muonplan/planner/yaml_reader.h"
#include "workload_flags.h"

namespace muonplan {

Workload load_workload(const std::string& path) {
  const detail::YamlMap m(detail::parse_yaml_text(read_input_file(path), path), path, "");
  Workload w;
  w.tokens_per_step = m.get_int("tokens_per_step");
  w.seq_len = m.get_int("seq_len");
  w.micro_batch_seqs = m.get_int("micro_batch_seqs", 1);
  // ac: full | selective | none, ac_targets: [names] (selective), ac_freq: N, by the rule the
  // flags use (workload_flags.h set_workload_ac).
  std::vector<std::string> targets;
  const YAML::Node t = m.raw("ac_targets");
  if (t.IsDefined() && !t.IsNull()) {
    if (!t.IsSequence()) m.fail("ac_targets", "expected a list of target names");
    for (const YAML::Node& n : t) {
      if (!n.IsScalar() || n.Scalar().empty())
        m.fail_at(n, "ac_targets", "expected a target name (a string)");
      targets.push_back(n.Scalar());
    }
  }
  detail::set_workload_ac(
      w, m.get_string("ac", "full"), targets, m.get_int("ac_freq", 1),
      {"ac", "ac_targets", "ac_freq"},
      [&](const char* key, const std::string& message) { m.fail(key, message); });
  w.ac_offload = m.get_bool("ac_offload", false);
  if (w.ac_offload && !w.ac_full && !w.ac_selective)
    m.fail("ac",
           "none contradicts ac_offload: true (offloading keeps AC's checkpoints in host RAM)");
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
  m.check_known({"tokens_per_step", "seq_len", "micro_batch_seqs", "ac", "ac_targets", "ac_freq",
                 "ac_offload", "lm_head_chunk", "cp_style", "attention"});
  return w;
}

}  // namespace muonplan
