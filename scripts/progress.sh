# Progress lines for the setup and build scripts (sourced): each stage prints what it does on
# stderr, then how long it took. build_progress passes the build's output through to stdout and
# prints "N%" on stderr each time make's percentage moves by 10 or more.
stage_t0=0
stage_start() {
  stage_t0=$SECONDS
  printf '%s ... ' "$1" >&2
}
stage_done() {
  local s=$((SECONDS - stage_t0))
  printf 'done (%d min %d s)\n' $((s / 60)) $((s % 60)) >&2
}
build_progress() {
  local line pct last=-10
  while IFS= read -r line; do
    printf '%s\n' "$line"
    case "$line" in
      "["*"%]"*)
        pct="${line#[}"; pct="${pct%%%]*}"; pct="${pct// /}"
        if [[ "$pct" =~ ^[0-9]+$ ]] && [ "$pct" -ge $((last + 10)) ]; then
          printf '%s%% ' "$pct" >&2
          last=$pct
        fi
        ;;
    esac
  done
}
