/**
 * The HTTP API reference from the service's own `GET /openapi.json`: the app is built as the service
 * builds it (buildService) and asked through Fastify's inject, so nothing listens and no database is
 * touched (the document is made from the route schemas at start-up).
 */
import { randomBytes } from "node:crypto";
import { buildService } from "../../src/service/app.js";
import { constraintsOf, flatten, type JsonSchema, typeOf } from "./json-schema.js";
import { code, generatedHeader, table } from "./markdown.js";

interface Operation {
  summary?: string;
  description?: string;
  tags?: string[];
  security?: Record<string, unknown>[];
  parameters?: { name: string; in: string; required?: boolean; schema?: JsonSchema; description?: string }[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: JsonSchema }> };
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: JsonSchema }> }>;
}
export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; description?: string };
  paths: Record<string, Record<string, Operation>>;
  components?: {
    securitySchemes?: Record<
      string,
      { type: string; scheme?: string; in?: string; name?: string; description?: string }
    >;
  };
}

/** The document the service serves at /openapi.json, without a database or a listener. */
export async function loadOpenApi(): Promise<OpenApiDocument> {
  // Building the app reads nothing from the database; a use would be a bug here, so it throws.
  const db = new Proxy(
    {},
    {
      get(_t, p) {
        if (p === "then") return undefined;
        throw new Error(`scripts/docs/openapi.ts: the database was used (db.${String(p)})`);
      },
    },
  );
  const service = await buildService({
    db: db as never,
    masterKey: randomBytes(32),
    adminToken: `tga_${randomBytes(32).toString("base64url")}`,
    schedulerIntervalMs: 0,
    defaultMetrics: false,
  });
  try {
    await service.app.ready();
    const r = await service.app.inject({ method: "GET", url: "/openapi.json" });
    if (r.statusCode !== 200) throw new Error(`GET /openapi.json answered ${r.statusCode}`);
    return r.json() as OpenApiDocument;
  } finally {
    await service.close();
  }
}

const METHODS = ["get", "put", "post", "patch", "delete"];

/** Which part of the API a path belongs to (the page's sections). */
function groupOf(p: string): string {
  if (p.startsWith("/v1/admin")) return "Admin API";
  if (p.startsWith("/v1/chains") || p.startsWith("/v1/outcomes")) return "Chains and actions";
  if (p.startsWith("/v1/approvals")) return "Approvals";
  if (p.startsWith("/v1/verification") || p.startsWith("/v1/public-verification-tokens"))
    return "Verification";
  if (p.startsWith("/v1/receipts")) return "Receipts";
  if (p.startsWith("/public") || p.startsWith("/.well-known")) return "Public routes";
  return "Health and metrics";
}
const GROUP_ORDER = [
  "Chains and actions",
  "Approvals",
  "Receipts",
  "Verification",
  "Public routes",
  "Admin API",
  "Health and metrics",
];

function schemaTable(schema: JsonSchema): string {
  const rows = flatten(schema).map(({ path, schema: s, required }) => [
    code(path),
    typeOf(s),
    required ? "yes" : "",
    s.default === undefined ? "" : code(JSON.stringify(s.default)),
    [s.description, constraintsOf(s)].filter(Boolean).join("; "),
  ]);
  if (!rows.length) return `${typeOf(schema)}\n`;
  return `${table(["field", "type", "required", "default", "notes"], rows)}\n`;
}

function operationMarkdown(method: string, p: string, op: Operation, doc: OpenApiDocument): string {
  const out: string[] = [`### ${method.toUpperCase()} \`${p}\``, ""];
  if (op.summary) out.push(op.summary, "");
  if (op.description) out.push(op.description, "");
  const schemes = doc.components?.securitySchemes ?? {};
  const security = (op.security ?? []).flatMap((s) => Object.keys(s));
  out.push(
    `**Credentials:** ${security.length ? security.map((s) => `${code(s)}${schemes[s]?.description ? "" : ""}`).join(" or ") : "none"}`,
    "",
  );
  if (op.parameters?.length) {
    out.push(
      "**Parameters**",
      "",
      table(
        ["name", "in", "type", "required", "notes"],
        op.parameters.map((q) => [
          code(q.name),
          q.in,
          typeOf(q.schema),
          q.required ? "yes" : "",
          [
            q.description,
            q.schema?.default !== undefined ? `default ${JSON.stringify(q.schema.default)}` : "",
            constraintsOf(q.schema),
          ]
            .filter(Boolean)
            .join("; "),
        ]),
      ),
      "",
    );
  }
  for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) {
    if (!media.schema) continue;
    out.push(
      `**Request body** (${code(type)}${op.requestBody?.required ? ", required" : ""})`,
      "",
      schemaTable(media.schema),
    );
  }
  const responses = Object.entries(op.responses ?? {});
  if (responses.length) {
    out.push("**Responses**", "");
    for (const [status, r] of responses) {
      const schema = r.content?.["application/json"]?.schema;
      const described = schema && status.startsWith("2") && (schema.properties || schema.items);
      out.push(`- ${code(status)} ${r.description ?? ""}${described ? ":" : ""}`);
      if (described) out.push("", schemaTable(schema).replace(/^/gm, "    "));
    }
    out.push("");
  }
  return out.join("\n");
}

/** The reference page for the whole document. */
export function openApiMarkdown(doc: OpenApiDocument): string {
  const ops: { group: string; method: string; path: string; op: Operation }[] = [];
  for (const [p, item] of Object.entries(doc.paths))
    for (const method of METHODS)
      if (item[method]) ops.push({ group: groupOf(p), method, path: p, op: item[method] });
  const out = [
    generatedHeader("HTTP API", "the service's `GET /openapi.json` (its zod route schemas)"),
    `${doc.info.title} ${doc.info.version}, OpenAPI ${doc.openapi}: ${ops.length} operations on ${Object.keys(doc.paths).length} paths. ` +
      "The document itself: [openapi.json](openapi.json) (the running service serves the same at `/openapi.json`). " +
      "Every error answers with the body described in [Error codes](errors.md).",
    "",
    "## Credentials",
    "",
    table(
      ["scheme", "type", "notes"],
      Object.entries(doc.components?.securitySchemes ?? {}).map(([name, s]) => [
        code(name),
        [s.type, s.scheme, s.in && `${s.in} ${s.name}`].filter(Boolean).join(" "),
        s.description ?? "",
      ]),
    ),
    "",
    "## Operations",
    "",
    table(
      ["operation", "section"],
      ops.map((o) => [code(`${o.method.toUpperCase()} ${o.path}`), o.group]),
    ),
    "",
  ];
  for (const group of GROUP_ORDER) {
    const inGroup = ops.filter((o) => o.group === group);
    if (!inGroup.length) continue;
    out.push(`## ${group}`, "");
    for (const o of inGroup) out.push(operationMarkdown(o.method, o.path, o.op, doc));
  }
  const unknown = ops.filter((o) => !GROUP_ORDER.includes(o.group));
  if (unknown.length)
    throw new Error(`openapi: operations in no section: ${unknown.map((o) => o.path).join(", ")}`);
  return `${out
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trimEnd()}\n`;
}
