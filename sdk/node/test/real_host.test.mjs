// A plugin built with the kit, run by the real `hookline` binary.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { hooklineBin, pluginDir, SCENARIO } from "./support.mjs";

function hookline(root, ...args) {
  const dirs = ["--plugins", join(root, "plugins"), "--workspace", root];
  return spawnSync(hooklineBin(), [...args, ...dirs], { cwd: root, encoding: "utf8", timeout: 60_000 });
}

test("hooks check passes", () => {
  const { root } = pluginDir();
  const out = hookline(root, "hooks", "check");
  assert.equal(out.status, 0, out.stdout + out.stderr);
  assert.match(out.stdout, /1 plugin\(s\) loaded, 0 with problems\./);
});

test("run calls hooks, raw hooks, events and tools", () => {
  const { root } = pluginDir();
  const out = hookline(root, "run", SCENARIO, "--json", "--verbose");
  assert.equal(out.status, 0, out.stderr);
  const events = JSON.parse(out.stdout).events;
  const of = (kind, field) => events.filter((e) => e.event === kind).map((e) => e[field]);
  assert.deepEqual(of("user", "text"), ["hello [kit]", "again [kit]"]);
  assert.ok(of("system-text", "text").every((t) => t.endsWith("\nKit rules.")));
  // The tool sees the session and the mode current at the call (changed mid-session).
  assert.deepEqual(of("tool-run", "text"), ["hi from s1 allow-workspace", "ho from s1 ask-all"]);
  const notes = JSON.stringify(JSON.parse(out.stdout).notes);
  assert.ok(!notes.includes("skipped") && !notes.includes("broke"), notes);
  assert.match(out.stderr, /\[kit\] kit saw command:new/);
});
