#!/usr/bin/env bash
# Runs every measurement of docs/performance.md in 3 interleaved rounds (the machine is shared:
# compare medians of ratios measured in one run, never absolute numbers across runs).
# Usage: scripts/perf-rounds.sh OUT_DIR   (builds release first)
set -euo pipefail
out=${1:-/tmp/hookline-perf}
mkdir -p "$out"
cargo build --release --bins --benches -q
B=target/release/hookline
cli() { local name=$1; shift; $B bench --json "$@" > "$out/r$round-$name.json" || echo "r$round $name failed" >> "$out/FAILED"; }
for round in ${ROUNDS:-1 2 3}; do
  cli inproc-1 --sessions 1 --duration 2
  cli inproc-64 --sessions 64 --duration 2
  cli inproc-1000 --sessions 1000 --duration 2
  cli inproc-1000-arb2 --sessions 1000 --arbiters 2 --duration 2
  cli inproc-1024-arb2-prompt --hook on_prompt --sessions 1024 --arbiters 2 --duration 2
  cli inproc-1024-arb2-tool --hook on_tool_call --sessions 1024 --arbiters 2 --duration 2
  max=$(python3 -c "import json;print(int(json.load(open('$out/r$round-inproc-1000-arb2.json'))['calls_per_second']))")
  cli inproc-open-half --sessions 1000 --arbiters 2 --rate $((max / 2)) --duration 2
  cli ext-rust-1 --source external-rust --plugin-count 1 --sessions 1 --duration 2
  cli ext-rust-1000 --source external-rust --plugin-count 1 --sessions 1000 --duration 2
  cli ext-py-1 --source external-python --plugin-count 1 --sessions 1 --duration 2
  cli ext-py-1000 --source external-python --plugin-count 1 --sessions 1000 --duration 2
  cli examples-64 --source examples --hook on_prompt --sessions 64 --duration 2
  cli memory --memory
  for bench in pipeline external gateway rules; do
    cargo bench -q --bench $bench -- --warm-up-time 0.5 --measurement-time 2 --noplot \
      > "$out/r$round-criterion-$bench.txt" 2>&1
  done
done
echo done > "$out/DONE"
