// The kit's side of the protocol, driven directly: hello, ids, calls in flight, cancel, errors,
// goodbye. The test plays the host, one JSON line at a time.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { PassThrough, Writable } from "node:stream";
import { test } from "node:test";
import { Plugin, PluginError } from "../index.js";
import { pluginDir } from "./support.mjs";

function fakeHost() {
  const { dir } = pluginDir();
  const child = spawn(process.execPath, [join(dir, "plugin.mjs")], {
    cwd: dir,
    env: { HOOKLINE_PLUGIN: "kit" },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  return {
    send: (message) => child.stdin.write(JSON.stringify(message) + "\n"),
    read: async () => {
      const { value, done } = await lines.next();
      assert.ok(!done, "the plugin closed its output");
      return JSON.parse(value);
    },
    rest: async () => {
      const left = [];
      for (let next = await lines.next(); !next.done; next = await lines.next()) left.push(next.value);
      return left;
    },
    goodbye: async function () {
      this.send({ type: "goodbye" });
      return exited;
    },
    close: () => child.stdin.end(),
    exited,
  };
}

const tool = (id, name, args) => ({
  type: "tool", id, tool: name, arguments: args, workspace_root: "/w", session: "s9",
  approval_mode: "ask-all",
});

test("hello lists exactly what is registered", async () => {
  const host = fakeHost();
  const hello = await host.read();
  assert.equal(hello.protocol, 1);
  assert.deepEqual(hello.hooks, ["on_user_message"]);
  assert.deepEqual(hello.raw_hooks, ["rewrite_prompt"]);
  assert.deepEqual(hello.events, ["command:new"]);
  assert.deepEqual(hello.tools.map((t) => t.name), ["kit_echo", "kit_sleep", "kit_fail"]);
  assert.equal(await host.goodbye(), 0);
});

test("many calls in flight are answered by id, in any order", async () => {
  const host = fakeHost();
  await host.read();
  host.send(tool(1, "kit_sleep", { seconds: 0.3 }));
  host.send(tool(2, "kit_echo", { text: "quick" }));
  host.send({ type: "hook", id: 3, hook: "on_user_message", session: "s9", value: { text: "x" } });
  const replies = new Map();
  for (let i = 0; i < 3; i++) {
    const reply = await host.read();
    replies.set(reply.id, reply);
  }
  assert.deepEqual(replies.get(2).value, { text: "quick from s9 ask-all", success: true });
  assert.deepEqual(replies.get(3), { type: "replace", id: 3, value: { text: "x [kit]" } });
  assert.equal(replies.get(1).value.text, "slept 0.3");
  assert.equal(await host.goodbye(), 0);
});

test("a cancelled call gets no reply and goodbye does not wait for it", async () => {
  const host = fakeHost();
  await host.read();
  host.send(tool(1, "kit_sleep", { seconds: 30 }));
  host.send({ type: "cancel", id: 1 });
  host.send(tool(2, "kit_echo", { text: "after" }));
  assert.equal((await host.read()).id, 2);
  const started = Date.now();
  assert.equal(await host.goodbye(), 0);
  assert.ok(Date.now() - started < 5000);
  assert.deepEqual(await host.rest(), []);
});

test("a call's traceparent reaches the handler's context", async () => {
  const host = fakeHost();
  await host.read();
  const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  host.send({ type: "hook", id: 1, hook: "on_user_message", session: "s9", value: { text: "x" }, traceparent });
  assert.deepEqual(await host.read(), {
    type: "replace", id: 1, value: { text: `x [kit] (${traceparent})` },
  });
  assert.equal(await host.goodbye(), 0);
});

test("failures become error replies and unhandled requests keep", async () => {
  const host = fakeHost();
  await host.read();
  host.send(tool(1, "kit_fail", {}));
  assert.deepEqual(await host.read(), {
    type: "replace", id: 1, value: { text: "kit_fail always fails", success: false },
  });
  host.send({ type: "hook", id: 2, hook: "on_prompt", session: "s9", value: {} });
  assert.deepEqual(await host.read(), { type: "keep", id: 2 });
  host.send({ type: "event", id: 3, key: "command:new", context: {} });
  assert.deepEqual(await host.read(), { type: "keep", id: 3 });
  host.send({ type: "hook", id: 4, hook: "rewrite_prompt", session: "s9", value: null });
  const reply = await host.read();
  assert.equal(reply.type, "error");
  assert.equal(await host.goodbye(), 0);
});

test("the end of input ends the plugin", async () => {
  const host = fakeHost();
  await host.read();
  host.close();
  assert.equal(await host.exited, 0);
});

test("definitions are checked when written", () => {
  const plugin = new Plugin("p");
  assert.throws(() => plugin.hook("on_nothing", () => {}), PluginError);
  assert.throws(() => plugin.rawHook("on_prompt", () => {}), PluginError);
  assert.throws(() => plugin.tool({ name: "t", risk: "harmless" }, () => ""), PluginError);
  plugin.hook("on_prompt", () => {});
  assert.throws(() => plugin.hook("on_prompt", () => {}), PluginError);
});

test("a call's signal is made when first read, and a cancel aborts it however late it is read", async () => {
  const input = new PassThrough();
  const written = [];
  const output = new Writable({
    write(chunk, _encoding, done) {
      written.push(...chunk.toString().split("\n").filter(Boolean).map((line) => JSON.parse(line)));
      done();
    },
  });
  let release;
  const gate = new Promise((resolve) => (release = resolve));
  const seen = {};
  const plugin = new Plugin("p")
    .hook("on_prompt", (_value, cx) => {
      seen.sync = cx.signal;
      return undefined;
    })
    .hook("on_user_message", async (message, cx) => {
      await gate;
      seen.late = cx.signal;
      return { ...message, text: "late" };
    });
  const running = plugin.run(input, output);
  input.write(JSON.stringify({ type: "hook", id: 1, hook: "on_prompt", value: {} }) + "\n");
  input.write(JSON.stringify({ type: "hook", id: 2, hook: "on_user_message", value: { text: "x" } }) + "\n");
  input.write(JSON.stringify({ type: "cancel", id: 2 }) + "\n");
  await new Promise((resolve) => setImmediate(resolve));
  release();
  await new Promise((resolve) => setImmediate(resolve));
  input.write(JSON.stringify({ type: "goodbye" }) + "\n");
  await running;
  assert.ok(seen.sync instanceof AbortSignal && !seen.sync.aborted);
  assert.ok(seen.late instanceof AbortSignal && seen.late.aborted, "the cancel reached the signal read after it");
  assert.deepEqual(written.map((reply) => reply.id ?? reply.type), ["hello", 1]);
});
