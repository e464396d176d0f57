#!/bin/sh
# Builds plugin.wasm from plugin.c and the kit (hookline.c) with Zig's clang from PyPI:
# wasm32 with no WASI and no libc, exporting the hookline guest ABI (docs/wasm.md).
set -eu
cd "$(dirname "$0")"
python=${PYTHON:-python3}
if ! "$python" -m ziglang version >/dev/null 2>&1; then
  echo "build.sh needs Zig from PyPI: $python -m pip install ziglang" >&2
  echo "(or, with Debian's clang and lld: clang --target=wasm32 -nostdlib -Os -Wl,--no-entry -o plugin.wasm plugin.c hookline.c)" >&2
  exit 1
fi
"$python" -m ziglang cc --target=wasm32-freestanding -nostdlib -Os -Wl,--no-entry \
  -o plugin.wasm plugin.c hookline.c
echo "built plugin.wasm ($(wc -c < plugin.wasm) bytes)"
