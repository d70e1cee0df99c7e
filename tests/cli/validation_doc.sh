#!/usr/bin/env bash
# docs/validation.md holds exactly what `muonplan validate --markdown` prints now.
set -u
source "$(dirname "$0")/lib.sh"
expect validate 0 "" "$bin" validate --published data/calibration/published.yaml \
  --models models --topology topologies/h200-ib.yaml --markdown
if cmp -s <(sed -n '/^| figure |/,$p' docs/validation.md) "$work/out"; then ok
else
  bad "docs/validation.md is stale: run scripts/gen-validation.sh"
  diff "$work/out" <(sed -n '/^| figure |/,$p' docs/validation.md)
fi
finish
