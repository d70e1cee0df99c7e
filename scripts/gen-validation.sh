#!/usr/bin/env bash
# Regenerates docs/validation.md from `muonplan validate --markdown`: the planner's
# predictions beside the published H200 measurements. The table is never typed by hand;
# ctest (cli.validation_doc) fails when the committed file is stale.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/build/cli/muonplan}"
{
  cat <<'HEAD'
# Validation against published measurements

The planner models from first principles (docs/planner.md); this page compares its predictions
with the measured figures in `tests/data/calibration/published.yaml` (a copy of
`shared/calibration/published.yaml`: H200 nodes, 8 GPUs each, NVLink inside a node). The
tolerances are the project's acceptance bounds; rows marked "reported" are shown for context
(the padded implementation the figures came from differs from ours in ways the file does not
describe). Nothing here is fitted to these rows: the time model's constants are the topology's
`calibration` section, documented in docs/planner.md.

Regenerate with `scripts/gen-validation.sh` (after a build). Command behind the table:
`muonplan validate --markdown` (default topology `topologies/h200-ib.yaml`, models from `models/`).

HEAD
  "$bin" validate --markdown
} > "$root/docs/validation.md"
