/**
 * The gRPC reference from proto/ with protobufjs: the services, messages and enums of
 * tollgate.v1 with the comments the .proto files carry (alternate comment mode: `//` comments
 * above a definition or after a field), and the file's leading comment (its error contract).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import protobuf from "protobufjs";
import { code, generatedHeader, slug, table } from "./markdown.js";

const FILE = "tollgate/v1/gateway.proto";

function load(protoDir: string): protobuf.Root {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => {
    const local = path.join(protoDir, target);
    try {
      readFileSync(local);
      return local;
    } catch {
      return target; // google/protobuf/*.proto: protobufjs ships them
    }
  };
  root.loadSync(FILE, { keepCase: true, alternateCommentMode: true });
  root.resolveAll();
  return root;
}

/** The comment lines before `syntax`: the contract's description of errors and waiting. */
function leadingComment(protoDir: string): string {
  const lines: string[] = [];
  for (const line of readFileSync(path.join(protoDir, FILE), "utf8").split("\n")) {
    if (!line.startsWith("//")) break;
    lines.push(line.replace(/^\/\/ ?/, ""));
  }
  return lines.join("\n").trim();
}

const one = (s: string | null | undefined) => (s ?? "").replace(/\s*\n\s*/g, " ").trim();

function typeLink(t: protobuf.ReflectionObject | null | undefined, name: string, pkg: string): string {
  if (t?.fullName.startsWith(`.${pkg}.`)) return `[${t.name}](#${slug(t.name)})`;
  return code(t ? t.fullName.slice(1) : name);
}

function fieldType(f: protobuf.Field, pkg: string): string {
  const base = f.resolvedType ? typeLink(f.resolvedType, f.type, pkg) : code(f.type);
  if (f instanceof protobuf.MapField) return `map<${code(f.keyType)}, ${base}>`;
  return f.repeated ? `repeated ${base}` : base;
}

/** The reference page of the tollgate.v1 package. */
export function protoMarkdown(protoDir: string): string {
  const root = load(protoDir);
  const pkg = "tollgate.v1";
  const ns = root.lookup(pkg) as protobuf.Namespace;
  const all = ns.nestedArray;
  const services = all.filter((x): x is protobuf.Service => x instanceof protobuf.Service);
  const messages = all.filter((x): x is protobuf.Type => x instanceof protobuf.Type);
  const enums = all.filter((x): x is protobuf.Enum => x instanceof protobuf.Enum);
  const out = [
    generatedHeader("gRPC contract", `\`proto/${FILE}\``),
    `Package \`${pkg}\`: ${services.length} service, ${messages.length} messages, ${enums.length} enums. ` +
      "The sidecar also serves the standard `grpc.health.v1.Health` and server reflection; error details use " +
      "`google.rpc.Status`, `ErrorInfo` and `BadRequest` (`proto/google/rpc/`).",
    "",
    "## The contract's notes",
    "",
    "From the file's leading comment:",
    "",
    "```text",
    leadingComment(protoDir),
    "```",
    "",
  ];
  for (const s of services) {
    out.push(`## ${s.name} {#${slug(s.name)}}`, "", one(s.comment), "");
    out.push(
      table(
        ["method", "request", "response", "description"],
        s.methodsArray.map((m) => [
          code(m.name),
          `${m.requestStream ? "stream " : ""}${typeLink(m.resolvedRequestType, m.requestType, pkg)}`,
          `${m.responseStream ? "stream " : ""}${typeLink(m.resolvedResponseType, m.responseType, pkg)}`,
          one(m.comment),
        ]),
      ),
      "",
    );
  }
  out.push("## Messages", "");
  for (const m of messages) {
    out.push(`### ${m.name} {#${slug(m.name)}}`, "");
    if (m.comment) out.push(one(m.comment), "");
    if (m.fieldsArray.length) {
      out.push(
        table(
          ["field", "number", "type", "description"],
          m.fieldsArray.map((f) => [
            code(f.name),
            String(f.id),
            `${fieldType(f, pkg)}${f.partOf && !f.partOf.name.startsWith("_") ? ` (oneof ${code(f.partOf.name)})` : ""}${f.options?.proto3_optional ? " (optional)" : ""}`,
            one(f.comment),
          ]),
        ),
        "",
      );
    } else out.push("No fields.", "");
  }
  if (enums.length) {
    out.push("## Enums", "");
    for (const e of enums) {
      out.push(`### ${e.name} {#${slug(e.name)}}`, "");
      if (e.comment) out.push(one(e.comment), "");
      out.push(
        table(
          ["name", "number", "description"],
          Object.entries(e.values).map(([name, n]) => [code(name), String(n), one(e.comments[name])]),
        ),
        "",
      );
    }
  }
  return `${out
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trimEnd()}\n`;
}
