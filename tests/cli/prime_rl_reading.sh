#!/usr/bin/env bash
# Reading prime-rl's files as its classes do (issue 50 item 5): a file with neither [trainer]
# nor [orchestrator] is no RL file (prime-rl's RLConfig takes them from there): a slim SFT file
# of [model] name and top-level keys is SFT; [model.vlm] (BaseModelConfig.vlm, prime-rl main)
# is a known key in SFT, RL shared and trainer tables; a standalone trainer file is one process
# unless --gpus-per-node says otherwise (prime_rl.sh checks its note).
set -u
source "$(dirname "$0")/lib.sh"

printf 'max_steps = 10\n\n[model]\nname = "Qwen/Qwen3-0.6B"\n\n[ckpt]\ninterval = 5\n' >"$work/slim.toml"
expect slim-sft 0 "" "$bin" plan --trainer-config "$work/slim.toml" --json
json_check slim-sft "$work/out" 'assert d["trainer_config"]["kind"] == "sft", d["trainer_config"]["kind"]'

vlm='[model.vlm]\nvision_encoder_attr = "model.visual"\nlanguage_model_attr = "model.language_model"\nfreeze_vision_encoder = true\n'
printf '[model]\nname = "Qwen/Qwen3-8B"\n\n[data]\nbatch_size = 8\n\n'"$vlm" >"$work/vlm-sft.toml"
expect vlm-sft 0 "" "$bin" plan --trainer-config "$work/vlm-sft.toml" --quiet
printf '[model]\nname = "Qwen/Qwen3-8B"\n\n'"$vlm"'\n[trainer.model.vlm]\nvision_encoder_attr = "model.visual"\nlanguage_model_attr = "model.language_model"\n\n[deployment]\ntype = "multi_node"\nnum_train_nodes = 1\n[slurm]\n' \
  >"$work/vlm-rl.toml"
expect vlm-rl 0 "" "$bin" plan --trainer-config "$work/vlm-rl.toml" --json
json_check vlm-rl "$work/out" 'assert d["trainer_config"]["kind"] == "rl", d["trainer_config"]["kind"]'
# An unknown key beside it is still named.
printf '[model]\nname = "Qwen/Qwen3-8B"\n\n[data]\nbatch_size = 8\n\n[model.vlm]\nvision_encoder = "x"\n' >"$work/vlm-typo.toml"
expect vlm-typo 0 "warning: $work/vlm-typo.toml:8:1: model.vlm.vision_encoder: unknown key in [model]; not planned" \
  "$bin" plan --trainer-config "$work/vlm-typo.toml" --quiet

# A standalone trainer file: one GPU unless the flags say otherwise.
printf '[model]\nname = "Qwen/Qwen3-0.6B"\nseq_len = 4096\n\n[data.fake]\nbatch_size = 4\n' >"$work/trainer.toml"
expect trainer-one 0 "" "$bin" plan --trainer-config "$work/trainer.toml" --json
json_check trainer-one "$work/out" 'assert (d["world_size"], d["trainer_config"]["kind"]) == (1, "trainer"), d["world_size"]'
expect trainer-torchrun 0 "note: --gpus-per-node 4 overrides $work/trainer.toml (one process: uv run trainer @ FILE (not in a trainer file))" "$bin" plan --trainer-config "$work/trainer.toml" --gpus-per-node 4 --json
json_check trainer-torchrun "$work/out" 'assert d["world_size"] == 4, d["world_size"]'

finish
