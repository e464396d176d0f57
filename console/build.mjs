// Builds the console into dist/ (committed: `cargo build` embeds it, so a fresh machine needs no
// Node). `node build.mjs` writes dist/; `node build.mjs --check` builds in memory and fails when
// dist/ differs (a stale or hand-edited dist).
//
// dist/source-hash.txt records the SHA-256 of the sources (the rule below); the Rust test
// `console_dist_matches_sources` (server/src/console.rs) recomputes it, so nobody edits the
// sources without rebuilding dist, or dist without the sources.
//
// The hash: for each source file, in byte order of its path relative to console/ (with `/`),
// the path, "\n", its length in bytes in decimal, "\n", its bytes, "\n"; SHA-256 of it all, hex.
// Sources: index.html, style.css, icon.svg, build.mjs, and every *.ts under src/.

import { createHash } from "node:crypto";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const root = dirname(fileURLToPath(import.meta.url));
const dist = join(root, "dist");

async function tsFiles(dir) {
  const out = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await tsFiles(path)));
    else if (entry.name.endsWith(".ts")) out.push(path);
  }
  return out;
}

/** The hash of the sources, as the Rust test computes it. */
export async function sourceHash() {
  const files = ["index.html", "style.css", "icon.svg", "build.mjs"].map((f) => join(root, f));
  files.push(...(await tsFiles(join(root, "src"))));
  const named = files.map((f) => [relative(root, f).split(sep).join("/"), f]);
  named.sort(([a], [b]) => (Buffer.compare(Buffer.from(a), Buffer.from(b))));
  const hash = createHash("sha256");
  for (const [name, file] of named) {
    const bytes = await readFile(file);
    hash.update(`${name}\n${bytes.length}\n`);
    hash.update(bytes);
    hash.update("\n");
  }
  return hash.digest("hex");
}

/** Every file of dist/, by path relative to dist/, as bytes. */
async function build() {
  const bundle = await esbuild.build({
    entryPoints: [join(root, "src", "main.ts")],
    bundle: true,
    format: "esm",
    target: ["chrome110", "firefox115", "safari16"],
    write: false,
    minify: false,
    legalComments: "none",
    charset: "utf8",
    logLevel: "warning",
  });
  const app = bundle.outputFiles[0];
  if (!app) throw new Error("esbuild produced no output");
  const hash = await sourceHash();
  return new Map([
    ["index.html", await readFile(join(root, "index.html"))],
    ["assets/app.js", Buffer.from(app.contents)],
    ["assets/style.css", await readFile(join(root, "style.css"))],
    ["assets/icon.svg", await readFile(join(root, "icon.svg"))],
    ["source-hash.txt", Buffer.from(`${hash}\n`)],
  ]);
}

const files = await build();
if (process.argv.includes("--check")) {
  const stale = [];
  for (const [name, bytes] of files) {
    const current = await readFile(join(dist, name)).catch(() => null);
    if (!current || !current.equals(bytes)) stale.push(name);
  }
  if (stale.length > 0) {
    console.error(`console/dist is stale (${stale.join(", ")}): run \`npm run build\` in console/ and commit dist/.`);
    process.exit(1);
  }
  console.log("console/dist matches the sources.");
} else {
  for (const [name, bytes] of files) {
    await mkdir(dirname(join(dist, name)), { recursive: true });
    await writeFile(join(dist, name), bytes);
  }
  console.log(`console/dist built (source hash ${files.get("source-hash.txt").toString().trim()}).`);
}
