// Debian's Chromium (not a browser Playwright downloads), headless, with a fresh profile, driven
// by playwright-core. Console errors and page errors are collected so a test can assert none
// happened (a Content-Security-Policy violation is logged as one).

import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** The browser: $CHROMIUM, else /usr/bin/chromium. */
export function chromiumPath() {
  return process.env.CHROMIUM ?? "/usr/bin/chromium";
}

/**
 * Why the browser tests skip: a sentence when Chromium is not installed, else false. Under
 * HOOKLINE_REQUIRE_SYSTEM_TESTS=1 (which .ci/run sets after installing it) a missing Chromium
 * throws instead, so CI runs every test (issue 20 item 3).
 */
export function chromiumMissing() {
  if (existsSync(chromiumPath())) return false;
  const why =
    `the console's browser tests need Chromium at ${chromiumPath()}, which is not installed ` +
    "(Debian: apt-get install -y chromium; or set CHROMIUM to its path)";
  if (process.env.HOOKLINE_REQUIRE_SYSTEM_TESTS === "1") {
    throw new Error(`${why}; HOOKLINE_REQUIRE_SYSTEM_TESTS=1 makes this a failure`);
  }
  return `${why}; set HOOKLINE_REQUIRE_SYSTEM_TESTS=1 to fail instead`;
}

/** A browser context on a fresh --user-data-dir; `close()` ends it and removes the profile. */
export async function launch() {
  const profile = await mkdtemp(join(tmpdir(), "hookline-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath(),
    headless: true,
    args: ARGS,
    viewport: { width: 1280, height: 800 },
    timeout: 60_000,
  });
  context.setDefaultTimeout(45_000);
  const problems = [];
  const watch = (page) => {
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });
    page.on("pageerror", (error) => problems.push(String(error)));
  };
  context.on("page", watch);
  for (const page of context.pages()) watch(page);
  return {
    context,
    problems,
    async page() {
      return context.pages()[0] ?? context.newPage();
    },
    async close() {
      await context.close().catch(() => undefined);
      await rm(profile, { recursive: true, force: true });
    },
  };
}
