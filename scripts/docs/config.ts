/**
 * Each program's configuration reference from its zod schema:
 * - service: `EnvSchema` of src/service/config.ts (module-private: its initializer is read from the
 *   source with the TypeScript compiler API and evaluated with zod and the two schemas it spreads,
 *   which are exported), descriptions from the same file's `--help` text;
 * - sidecar: the exported `SidecarConfigSchema` of sidecar/config.ts, variable names and
 *   descriptions from that file's header comment (every key must be named there);
 * - operator: `operatorEnvironmentHelp()` of operator/config.ts, which the operator generates from
 *   its schema's `.describe()` texts and defaults.
 * Types, defaults and bounds come from `z.toJSONSchema` of the schemas themselves.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { z } from "zod";
import { operatorEnvironmentHelp } from "../../operator/config.js";
import { SidecarConfigSchema } from "../../sidecar/config.js";
import { SmtpEnvSchema } from "../../src/service/notify/smtp.js";
import { OidcEnvSchema } from "../../src/service/oidc/settings.js";
import { constraintsOf, type JsonSchema, typeOf } from "./json-schema.js";
import { code, generatedHeader, table } from "./markdown.js";

/** The initializer text of the top-level `const <name> = …` of a TypeScript file. */
function constInitializer(file: string, name: string): ts.Expression {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  for (const stmt of source.statements) {
    if (!ts.isVariableStatement(stmt)) continue;
    for (const d of stmt.declarationList.declarations)
      if (ts.isIdentifier(d.name) && d.name.text === name && d.initializer) return d.initializer;
  }
  throw new Error(`${file}: no top-level const ${name}`);
}

function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  return z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema;
}

const defaultOf = (s: JsonSchema | undefined) =>
  s?.default === undefined ? "" : code(JSON.stringify(s.default));

function rowsOf(
  props: Record<string, JsonSchema>,
  required: string[],
  envOf: (key: string) => string,
  describe: (key: string, env: string) => string,
): string[][] {
  return Object.entries(props).map(([key, s]) => {
    const env = envOf(key);
    return [
      code(env),
      typeOf(s),
      required.includes(key) && s.default === undefined ? "required" : defaultOf(s),
      constraintsOf(s),
      describe(key, env),
    ];
  });
}

const HEAD = ["variable", "type", "default", "bounds", "description"];

/** `NAME[_FILE], OTHER=true   text` lines of a help text → description by variable. */
export function helpDescriptions(help: string): Map<string, string> {
  const out = new Map<string, string>();
  let last: string[] = [];
  for (const line of help.split("\n")) {
    const m = /^ {2}([A-Z][A-Z0-9_[\]=, a-z]*?)\s{2,}(\S.*)$/.exec(line);
    if (m?.[1] && /^[A-Z]/.test(m[1])) {
      last = m[1].split(/,\s*/).flatMap((n) => {
        const bare = n.replace(/=.*$/, "").trim();
        const opt = /^(.*)\[(_[A-Z]+)\]$/.exec(bare);
        return opt ? [opt[1]!, `${opt[1]}${opt[2]}`] : [bare];
      });
      for (const n of last) out.set(n, m[2]!.trim());
    } else if (/^\s{8,}\S/.test(line) && last.length) {
      for (const n of last) out.set(n, `${out.get(n)} ${line.trim()}`);
    } else last = [];
  }
  return out;
}

function serviceSection(root: string): string {
  const file = path.join(root, "src/service/config.ts");
  const init = constInitializer(file, "EnvSchema");
  const js = ts.transpile(init.getText(), { target: ts.ScriptTarget.ES2022 });
  const schema = new Function(
    "z",
    "SmtpEnvSchema",
    "OidcEnvSchema",
    `return (${js.trim().replace(/;$/, "")});`,
  )(z, SmtpEnvSchema, OidcEnvSchema) as z.ZodObject;
  const helpNode = constInitializer(file, "help");
  if (!ts.isNoSubstitutionTemplateLiteral(helpNode)) throw new Error(`${file}: help is not a plain template`);
  const help = helpDescriptions(helpNode.text);
  const js2 = jsonSchemaOf(schema);
  const rows = rowsOf(
    js2.properties ?? {},
    [],
    (k) => k,
    (k) => help.get(k) ?? "",
  );
  return [
    "## Service",
    "",
    "`tollgate-service` (`npm start`, the container's `node dist/service.js`). Environment variables; the flags " +
      "`--port`, `--host`, `--data-dir`, `--log-level` set the variables of the same name and win over them. " +
      "Validated once at start-up: an invalid value exits 2 naming the variable. " +
      "A `*_FILE` variable names a file holding the secret (what a mounted Secret provides).",
    "",
    "Schema: `EnvSchema` in `src/service/config.ts` (with `SmtpEnvSchema`, `OidcEnvSchema`); descriptions: its `--help`.",
    "",
    table(HEAD, rows),
    "",
  ].join("\n");
}

/** The header comment of sidecar/config.ts: `NAME [file_key] description` with continuation lines. */
function sidecarComment(file: string): Map<string, { key?: string; text: string }> {
  const text = readFileSync(file, "utf8");
  const header = text.slice(text.indexOf("/**"), text.indexOf("*/"));
  const out = new Map<string, { key?: string; text: string }>();
  let last: string | undefined;
  for (const raw of header.split("\n")) {
    const line = raw.replace(/^\s*\*\s?/, "");
    const m = /^ {2}([A-Z][A-Z0-9_]+)\s+(?:\[([a-z_]+)\]\s+)?(\S.*)?$/.exec(line);
    if (m?.[1]) {
      last = m[1];
      out.set(last, { key: m[2], text: (m[3] ?? "").trim() });
    } else if (last && /^\s{20,}\S/.test(line)) {
      const e = out.get(last)!;
      e.text = `${e.text} ${line.trim()}`.trim();
    } else last = undefined;
  }
  return out;
}

function sidecarSection(root: string): string {
  const file = path.join(root, "sidecar/config.ts");
  const comment = sidecarComment(file);
  const envOf = (key: string) =>
    key === "logLevel" ? "LOG_LEVEL" : `TOLLGATE_${key.replace(/([A-Z])/g, "_$1").toUpperCase()}`;
  const js = jsonSchemaOf(SidecarConfigSchema);
  const props = js.properties ?? {};
  for (const key of Object.keys(props))
    if (!comment.has(envOf(key)))
      throw new Error(`sidecar/config.ts: ${envOf(key)} (${key}) is not in the header comment`);
  const rows = rowsOf(props, js.required ?? [], envOf, (_key, env) => {
    const c = comment.get(env)!;
    return `${c.text}${c.key ? ` (file key ${code(c.key)})` : ""}`;
  });
  const extra = [...comment.entries()].filter(([env]) => !Object.keys(props).some((k) => envOf(k) === env));
  for (const [env, c] of extra) rows.push([code(env), "string", "", "", c.text]);
  return [
    "## Sidecar",
    "",
    "`tollgate-sidecar` (`node --import tsx sidecar/main.ts`, the image's `node dist/sidecar.js`), as the admission " +
      "webhook injects it. Environment variables over an optional YAML/JSON file (`--config` or " +
      "`TOLLGATE_CONFIG_FILE`, snake_case keys); the API key is read from its file only. Invalid configuration exits 2 " +
      "naming the variable or key. Upstreams: `{name, type: http, url, timeout_ms?, headers?}`, " +
      "`{name, type: mcp, transport: streamable_http, url, timeout_ms?}`, " +
      "`{name, type: mcp, transport: stdio, command, args?, env?, cwd?, timeout_ms?}`.",
    "",
    "Schema: `SidecarConfigSchema` in `sidecar/config.ts`; names and descriptions: that file's header comment.",
    "",
    table(HEAD, rows),
    "",
  ].join("\n");
}

function operatorSection(): string {
  const help = operatorEnvironmentHelp();
  const rows: string[][] = [];
  const env = help.slice(help.indexOf("Environment:"), help.indexOf("\n\n", help.indexOf("Environment:")));
  for (const line of env.split("\n").slice(1)) {
    const m = /^ {2}(\S+)\s+(.*?)(?: \[default: (.*)\])?$/.exec(line);
    if (!m?.[1]) throw new Error(`operatorEnvironmentHelp(): unexpected line ${JSON.stringify(line)}`);
    rows.push([code(m[1]), m[3] === undefined ? "" : code(m[3]), m[2] ?? ""]);
  }
  const tracing = /Tracing[^\n]*\n\s+(.*)/.exec(help)?.[1] ?? "";
  return [
    "## Operator",
    "",
    "`tollgate-operator` (`node --import tsx operator/main.ts`, the image's `node dist/operator.js`). Environment " +
      "only; `--help` prints the same list. Invalid configuration exits naming the variable.",
    "",
    "Schema: `EnvSchema` in `operator/config.ts`, through `operatorEnvironmentHelp()` (its `.describe()` texts and defaults).",
    "",
    table(["variable", "default", "description"], rows),
    "",
    `Tracing: ${tracing
      .split(/,\s*/)
      .filter(Boolean)
      .map((v) => code(v))
      .join(", ")} (see [Tracing](../operations/tracing.md)).`,
    "",
  ].join("\n");
}

/** The configuration reference page of the three programs. */
export function configMarkdown(root: string): string {
  return `${[
    generatedHeader(
      "Configuration",
      "the zod schemas of `src/service/config.ts`, `sidecar/config.ts` and `operator/config.ts`",
    ),
    "Every program validates its configuration once at start-up and prints it without secrets. " +
      "The OpenTelemetry variables (`OTEL_*`) are shared by all three: [Tracing](../operations/tracing.md).",
    "",
    serviceSection(root),
    sidecarSection(root),
    operatorSection(),
  ].join("\n")}`;
}
