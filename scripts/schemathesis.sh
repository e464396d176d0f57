#!/usr/bin/env bash
# Fuzzes a live `hookline serve` from its own OpenAPI document with Schemathesis (issue 24 item 2,
# docs/serve.md "OpenAPI"): fails on any 5xx answer and on any answer that does not match the
# schema the document gives for its route and status.
#
# Installs Schemathesis (PyPI) in a virtual environment when it is missing, starts the server on
# an ephemeral loopback port over a scratch workspace and home (stopped and removed on exit),
# and bounds the run (--max-time; each request --request-timeout). It runs with credentials
# (issue 48): the server takes a `--token-file` (one admin key) and every request carries it, so
# the routes are fuzzed past the root layer that checks principals (docs/serve.md "Auth").
# Usage: scripts/schemathesis.sh [HOOKLINE_BINARY]   (relative to the repository root; default
# target/debug/hookline). SCHEMATHESIS_MAX_TIME (seconds, default 150) bounds the fuzzing.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${1:-target/debug/hookline}
max_time=${SCHEMATHESIS_MAX_TIME:-150}
venv=${SCHEMATHESIS_VENV:-${TMPDIR:-/tmp}/hookline-schemathesis}
[ -x "$bin" ] || { echo "no hookline binary at $bin (cargo build --bin hookline)" >&2; exit 1; }

# The CLI flags below are those of Schemathesis 4.
if [ ! -x "$venv/bin/schemathesis" ]; then
  # --clear: a venv left half-made by an interrupted install (no pip) is made again.
  python3 -m venv --clear "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis>=4.32,<5"
fi

scratch=$(mktemp -d)
server=""
stop_server() {
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
    kill -TERM "$server" 2>/dev/null || true
    # The drain is bounded (--drain-budget-ms); past 20 s the server is killed.
    for _ in $(seq 1 40); do kill -0 "$server" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  rm -rf "$scratch"
}
trap stop_server EXIT

mkdir -p "$scratch/workspaces" "$scratch/home"
# A high-entropy token, as an operator would make one.
token=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')
printf '%s\n' "$token" >"$scratch/token"
# The demo plugins run (a server runs none unless asked): their hooks and approvals are fuzzed too.
HOOKLINE_HOME="$scratch/home" "$bin" serve --listen 127.0.0.1:0 --demo-plugins \
  --workspace-root "$scratch/workspaces" --token-file "$scratch/token" \
  --approval-timeout-ms 2000 --drain-budget-ms 1000 --request-timeout-ms 30000 \
  >"$scratch/serve.out" 2>"$scratch/serve.err" &
server=$!

# It prints `hookline serve: listening on http://ADDR` once it answers.
base=""
for _ in $(seq 1 100); do
  base=$(sed -n 's/^hookline serve: listening on \(http:[^ ]*\).*/\1/p' "$scratch/serve.out" | head -n 1)
  [ -n "$base" ] && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.2
done
if [ -z "$base" ]; then
  echo "hookline serve did not start:" >&2
  cat "$scratch/serve.err" >&2
  exit 1
fi

# Links for the stateful phase come from the document's own analysis only: Schemathesis's links
# inferred from `Location` headers have joined `POST /v1/sessions` to `GET /v1/whoami` (a route
# without the `id` they pass) and then stop the whole phase as an invalid link definition.
cat >"$scratch/schemathesis.toml" <<'TOML'
[phases.stateful.inference]
algorithms = ["dependency-analysis"]
TOML

# /v1/events streams until the server drains: a request to it never ends, so it is left out.
# Run from the scratch directory: Schemathesis keeps its cache in the working directory.
status=0
(
  cd "$scratch"
  timeout $((max_time + 120)) "$venv/bin/schemathesis" run "$base/v1/openapi.json" \
    --checks not_a_server_error,response_schema_conformance \
    --exclude-path /v1/events \
    --header "Authorization: Bearer $token" \
    --max-examples 30 --max-time "$max_time" --request-timeout 20 \
    --suppress-health-check all
) || status=$?
if [ "$status" -ne 0 ]; then
  echo "schemathesis failed ($status); the server's log:" >&2
  tail -n 50 "$scratch/serve.err" >&2
fi
exit "$status"
