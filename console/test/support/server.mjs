// Starts the real `hookline serve` (built by `cargo build --bins`) on a free loopback port with a
// token file and a temporary workspace root, and stops it at the end. Every wait is bounded.

import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../../..");

/**
 * The `hookline` binary: $HOOKLINE_BIN, else debug, else release, in $CARGO_TARGET_DIR (relative
 * to the repository) or target/.
 */
export function hooklineBinary() {
  const target = resolve(repo, process.env.CARGO_TARGET_DIR ?? "target");
  const candidates = [
    process.env.HOOKLINE_BIN,
    join(target, "debug", "hookline"),
    join(target, "release", "hookline"),
  ].filter(Boolean);
  const found = candidates.find((path) => existsSync(path));
  if (!found) {
    throw new Error(`no hookline binary (looked at ${candidates.join(", ")}): run \`cargo build --bins\` first`);
  }
  return found;
}

const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 15_000;

/** A running server. */
export class Server {
  constructor(child, url, token, dir) {
    this.child = child;
    this.url = url;
    this.token = token;
    this.dir = dir;
    this.root = join(dir, "root");
    this.stderr = "";
    child.stderr.on("data", (chunk) => {
      // Kept (bounded) for a failing test's message.
      this.stderr = (this.stderr + chunk).slice(-20_000);
    });
  }

  /** Starts one: temp HOOKLINE_HOME (no user plugins) and the bundled demo plugins (`--demo-plugins`). */
  static async start() {
    const dir = await mkdtemp(join(tmpdir(), "hookline-console-"));
    const root = join(dir, "root");
    const home = join(dir, "home");
    await mkdir(root);
    await mkdir(join(home, "plugins"), { recursive: true });
    const token = `console-test-${Math.random().toString(36).slice(2)}`;
    const tokenFile = join(dir, "token");
    await writeFile(tokenFile, `${token}\n`, { mode: 0o600 });
    const child = spawn(hooklineBinary(), [
      "serve", "--listen", "127.0.0.1:0", "--token-file", tokenFile,
      "--workspace-root", root, "--plugins", join(home, "plugins"), "--demo-plugins", "--arbiters", "1",
      "--approval-timeout-ms", "60000", "--drain-budget-ms", "2000",
    ], {
      env: { ...process.env, HOOKLINE_HOME: home, RUST_LOG: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const url = await new Promise((resolveUrl, reject) => {
      let out = "";
      let err = "";
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(new Error(`hookline serve did not say where it listens within ${START_TIMEOUT_MS} ms: ${err}`));
      }, START_TIMEOUT_MS);
      child.stderr.on("data", (chunk) => { err = (err + chunk).slice(-5000); });
      child.stdout.on("data", (chunk) => {
        out += chunk;
        const match = /listening on (http:\/\/[0-9.:]+)/.exec(out);
        if (match) {
          clearTimeout(timer);
          resolveUrl(match[1]);
        }
      });
      child.on("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`hookline serve exited with ${code}: ${err}`));
      });
    });
    return new Server(child, url, token, dir);
  }

  /** A new API key in the server's store (`hookline keys create`): the key, printed once. */
  async createKey(tenant, role) {
    const { stdout } = await promisify(execFile)(hooklineBinary(), [
      "keys", "--store", join(this.root, ".hookline"), "create", "--tenant", tenant, "--role", role,
    ], { timeout: 30_000 });
    return stdout.trim();
  }

  /** An API request with the token; returns { status, body } (body parsed when JSON). */
  async api(method, path, body, token = this.token) {
    const response = await fetch(this.url + path, {
      method,
      headers: {
        ...(token ? { Authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(90_000),
    });
    const text = await response.text();
    let parsed = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Not JSON (the page, metrics).
    }
    return { status: response.status, headers: response.headers, body: parsed };
  }

  /** SIGTERM (the server drains), then SIGKILL past the bound; removes the temp dirs. */
  async stop() {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((done) => this.child.once("exit", done));
      this.child.kill("SIGTERM");
      const timer = setTimeout(() => this.child.kill("SIGKILL"), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    }
    await rm(this.dir, { recursive: true, force: true });
  }
}
