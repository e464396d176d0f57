// {{name}}: a hookline plugin written with the Node kit (hookline_plugin/, no dependencies).
// See README.md. Run `hookline hooks check` after a change; `hookline run --verbose` shows this
// plugin's log lines (stderr) prefixed with its name.
import { readFile } from "node:fs/promises";
import { isAbsolute, join } from "node:path";
import { Plugin } from "./hookline_plugin/index.js";

const plugin = new Plugin();

plugin
  // SPEC P2.2 (docs/spec.md of hookline): a prompt hook may only append.
  .hook("on_prompt", (prompt) => ({
    ...prompt,
    appended: [...(prompt.appended ?? []), "Keep answers short."],
  }))
  .event("command:new", (context) => {
    plugin.log(`a new session was asked for from ${context.commandSource}`);
  })
  .tool(
    { name: "word_count", description: "Counts the words of `text`, or of the workspace file `path`." },
    async (args, cx) => {
      const count = (text) => `${text.split(/\s+/).filter(Boolean).length} words`;
      if (typeof args.text === "string") return count(args.text);
      const path = String(args.path ?? "");
      if (!path || isAbsolute(path) || path.split("/").includes("..")) {
        throw new Error("word_count needs `text`, or a relative `path` inside the workspace");
      }
      return count(await readFile(join(cx.workspaceRoot, path), "utf8"));
    },
  );

await plugin.run();
