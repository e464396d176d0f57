// The generated wire types stay in sync with docs/protocol/*.json, and the kit's hook lists
// with the protocol's hook names.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { HOOKS, RAW_HOOKS } from "../index.js";
import { KIT, REPO } from "./support.mjs";

test("protocol.d.ts is what the schemas generate", () => {
  const out = spawnSync(process.execPath, [join(KIT, "scripts", "generate-types.mjs"), "--check"], {
    encoding: "utf8",
  });
  assert.equal(out.status, 0, out.stderr);
});

test("the kit knows exactly the protocol's hooks", () => {
  const schema = JSON.parse(readFileSync(join(REPO, "docs", "protocol", "host-message.json"), "utf8"));
  const names = schema.$defs.HookRequest.properties.hook.enum;
  assert.deepEqual([...HOOKS, ...RAW_HOOKS], names);
});
