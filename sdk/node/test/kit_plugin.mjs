// The plugin the kit's tests run under the real `hookline` binary (and drive directly): the
// same plugin as the Python and Rust kits' tests (sdk/tests/scenario.json).
import { setTimeout as sleep } from "node:timers/promises";
import { Plugin, ToolResult } from "./hookline_plugin/index.js";

const plugin = new Plugin();

plugin
  // The trace context, when the host sends one, is the handler's to use (here: echoed).
  .hook("on_user_message", (message, cx) => ({
    ...message,
    text: `${message.text} [kit]${cx.traceparent ? ` (${cx.traceparent})` : ""}`,
  }))
  .rawHook("rewrite_prompt", async (text) => ({ ...text, text: `${text.text}\nKit rules.` }))
  .event("command:new", (_context, cx) => plugin.log(`kit saw ${cx.name}`))
  .tool({ name: "kit_echo", description: "Echoes its text with the session facts." },
    async (args, cx) => `${args.text ?? ""} from ${cx.session} ${cx.approvalMode}`)
  .tool({ name: "kit_sleep", description: "Sleeps for `seconds`, then answers." },
    async (args, cx) => {
      await sleep(Number(args.seconds ?? 0) * 1000, undefined, { signal: cx.signal });
      return new ToolResult(`slept ${args.seconds}`);
    })
  .tool({ name: "kit_fail", description: "Always fails." }, () => {
    throw new Error("kit_fail always fails");
  });

await plugin.run();
