#!/usr/bin/env bash
# docs/cli-contract.md's flag tables against the CLI's own (issue 47 item 5): each command's
# section lists exactly the flags its --help lists. report's "plan flags" row stands for plan's
# rows less the three it names; group-"" test hooks (usable, not in --help) are listed here by
# name and must still be documented and accepted.
set -u
source "$(dirname "$0")/lib.sh"
if out="$(python3 - "$bin" docs/cli-contract.md <<'PY'
import re, subprocess, sys
bin, doc = sys.argv[1], open(sys.argv[2]).read()
hidden = {"execute": {"--async-drop-joins", "--inject-nonfinite"}}
rows = lambda body: set(re.findall(r"^\| `(--[a-z0-9-]+)", body, flags=re.M))
sections = {}
for sec in re.split(r"^## muonplan ", doc, flags=re.M)[1:]:
    name, body = sec.split("\n", 1)
    sections[name.strip()] = body.split("\n## ", 1)[0]
problems = []
for name, body in sections.items():
    documented = rows(body)
    m = re.search(r"^\| plan flags \|[^|]*\| every plan flag above; (.*)\|$", body, flags=re.M)
    if m:
        documented |= rows(sections["plan"]) - set(re.findall(r"`(--[a-z0-9-]+)`", m.group(1)))
    h = subprocess.run([bin] + name.split() + ["--help"], capture_output=True, text=True)
    listed = set(re.findall(r"^\s+(?:-[a-zA-Z], )?(--[a-z0-9-]+)", h.stdout, flags=re.M))
    listed = (listed - {"--help"}) | hidden.get(name, set())
    for f in sorted(listed - documented):
        problems.append(f"{name}: {f} is a flag, not in docs/cli-contract.md")
    for f in sorted(documented - listed):
        problems.append(f"{name}: {f} is in docs/cli-contract.md, not a flag")
if len(sections) < 10:
    problems.append(f"only {len(sections)} command sections found")
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY
)"; then ok; else bad "flag tables disagree: $out"; fi
# The hidden test hooks are flags the CLI accepts.
EXPECT_MATCH=suffix expect hidden-hook 2 "--inject-nonfinite: expected NAME:STEP" "$bin" execute --plan missing.json \
  --inject-nonfinite x
finish
