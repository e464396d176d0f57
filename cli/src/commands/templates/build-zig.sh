#!/bin/sh
# Builds plugin.wasm from plugin.zig and the kit (hookline.zig) with Zig from PyPI:
# wasm32-freestanding (no WASI), exporting the hookline guest ABI (docs/wasm.md) and nothing else.
set -eu
cd "$(dirname "$0")"
python=${PYTHON:-python3}
if ! "$python" -m ziglang version >/dev/null 2>&1; then
  echo "build.sh needs Zig from PyPI: $python -m pip install ziglang" >&2
  exit 1
fi
"$python" -m ziglang build-exe plugin.zig -target wasm32-freestanding -fno-entry -O ReleaseSmall \
  --export=hookline_abi --export=hookline_alloc --export=hookline_hello --export=hookline_call \
  -femit-bin=plugin.wasm
echo "built plugin.wasm ($(wc -c < plugin.wasm) bytes)"
