// Shared by the tests: the real binary, and a plugin directory built with the kit.
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const KIT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const REPO = join(KIT, "..", "..");
export const SCENARIO = join(REPO, "sdk", "tests", "scenario.json");

/**
 * `$HOOKLINE_BIN`, else the workspace's debug build (`cargo build --bin hookline`) in
 * `$CARGO_TARGET_DIR` (relative to the repository) or `target/`.
 */
export function hooklineBin() {
  const target = resolve(REPO, process.env.CARGO_TARGET_DIR ?? "target");
  const path = process.env.HOOKLINE_BIN ?? join(target, "debug", "hookline");
  if (!existsSync(path)) {
    throw new Error(`no hookline binary at ${path}: run \`cargo build --bin hookline\` first`);
  }
  return path;
}

/** The scratch directories made by `pluginDir`, removed when the test file's process exits. */
const scratch = [];
process.on("exit", () => {
  for (const root of scratch) rmSync(root, { recursive: true, force: true });
});

/**
 * `<tmp>/plugins/kit`: the test plugin with the kit beside it (SPEC L2: nothing outside). The
 * directory is removed when the process exits.
 */
export function pluginDir() {
  const root = mkdtempSync(join(tmpdir(), "hookline-node-kit-"));
  scratch.push(root);
  const dir = join(root, "plugins", "kit");
  mkdirSync(join(dir, "hookline_plugin"), { recursive: true });
  for (const file of ["index.js", "package.json"]) {
    cpSync(join(KIT, file), join(dir, "hookline_plugin", file));
  }
  cpSync(join(KIT, "test", "kit_plugin.mjs"), join(dir, "plugin.mjs"));
  writeFileSync(join(dir, "plugin.json"), JSON.stringify({ entry: "plugin.mjs", interpreter: "node" }));
  return { root, dir };
}
