// Generates protocol.d.ts from the protocol's JSON Schemas (docs/protocol/*.json), so the kit's
// wire types never drift from the host's. `node scripts/generate-types.mjs` writes the file;
// `--check` exits 1 when the committed file differs (test/types.test.mjs runs it).
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const schemas = join(here, "..", "..", "..", "docs", "protocol");
const target = join(here, "..", "protocol.d.ts");

function doc(description, indent) {
  if (!description) return "";
  const lines = description.split("\n").map((line) => `${indent} * ${line}`.trimEnd());
  return `${indent}/**\n${lines.join("\n")}\n${indent} */\n`;
}

function typeOf(schema) {
  if (schema.$ref) return schema.$ref.split("/").pop();
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (types.length === 0) return "unknown";
  return types
    .map((t) => {
      switch (t) {
        case "integer":
        case "number":
          return "number";
        case "string":
        case "boolean":
        case "null":
          return t;
        case "array":
          return `Array<${schema.items ? typeOf(schema.items) : "unknown"}>`;
        case "object":
          return schema.properties ? objectType(schema, "") : "Record<string, unknown>";
        default:
          return "unknown";
      }
    })
    .join(" | ");
}

function objectType(schema, indent) {
  const required = new Set(schema.required ?? []);
  const fields = Object.entries(schema.properties ?? {})
    .sort(([a], [b]) => (a === "type" ? -1 : b === "type" ? 1 : a.localeCompare(b)))
    .map(([name, prop]) => {
      const optional = required.has(name) ? "" : "?";
      return `${doc(prop.description, indent + "  ")}${indent}  ${name}${optional}: ${typeOf(prop)};`;
    });
  return `{\n${fields.join("\n")}\n${indent}}`;
}

function variant(schema) {
  const own = objectType({ ...schema, $ref: undefined }, "  ");
  return schema.$ref ? `(${own} & ${typeOf({ $ref: schema.$ref })})` : own;
}

function file(name) {
  const schema = JSON.parse(readFileSync(join(schemas, `${name}.json`), "utf8"));
  const out = [];
  for (const [defName, def] of Object.entries(schema.$defs ?? {})) {
    out.push(`${doc(def.description, "")}export interface ${defName} ${objectType(def, "")}\n`);
  }
  const variants = schema.oneOf.map((v) => `${doc(v.description, "  ")}  | ${variant(v)}`);
  out.push(`${doc(schema.description, "")}export type ${schema.title} =\n${variants.join("\n")};\n`);
  return out.join("\n");
}

const text = [
  "// Generated from docs/protocol/*.json by scripts/generate-types.mjs. Do not edit:",
  "// `npm run generate` rewrites it; test/types.test.mjs fails when it drifts.",
  "",
  file("host-message"),
  file("plugin-message"),
].join("\n");

if (process.argv.includes("--check")) {
  const current = readFileSync(target, "utf8");
  if (current !== text) {
    console.error("protocol.d.ts is out of date: run `npm run generate` in sdk/node");
    process.exit(1);
  }
} else {
  writeFileSync(target, text);
}
