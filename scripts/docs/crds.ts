/**
 * The CRD reference from crds/*.yaml (themselves generated from operator/crds/schema.ts by
 * `npm run gen:crds`): per kind its names, scope, printer columns and every spec and status field
 * with type, constraints and description, and the CEL rules.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { constraintsOf, flatten, type JsonSchema, typeOf } from "./json-schema.js";
import { code, generatedHeader, table } from "./markdown.js";

interface Crd {
  spec: {
    group: string;
    scope: string;
    names: { kind: string; plural: string; shortNames?: string[]; categories?: string[] };
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      additionalPrinterColumns?: { name: string; type: string; jsonPath: string; description?: string }[];
      schema: { openAPIV3Schema: JsonSchema };
    }[];
  };
}

function rules(s: JsonSchema, at: string): string[][] {
  const out: string[][] = [];
  const validations =
    (s["x-kubernetes-validations"] as { rule: string; message?: string }[] | undefined) ?? [];
  for (const v of validations) out.push([code(at || "(root)"), code(v.rule), v.message ?? ""]);
  for (const [name, child] of Object.entries(s.properties ?? {}))
    out.push(...rules(child, at ? `${at}.${name}` : name));
  if (s.items) out.push(...rules(s.items, `${at}[]`));
  return out;
}

function fields(s: JsonSchema | undefined): string {
  if (!s) return "None.\n";
  const rows = flatten(s, 8).map(({ path: p, schema: f, required }) => [
    code(p),
    typeOf(f),
    required ? "yes" : "",
    f.default === undefined ? "" : code(JSON.stringify(f.default)),
    [f.description, constraintsOf(f)].filter(Boolean).join("; "),
  ]);
  return `${table(["field", "type", "required", "default", "description"], rows)}\n`;
}

/** The reference page of every CRD in `crdDir`. */
export function crdsMarkdown(crdDir: string): string {
  const files = readdirSync(crdDir)
    .filter((f) => f.endsWith(".yaml"))
    .sort();
  const crds = files.map((f) => ({
    file: f,
    crd: parseYaml(readFileSync(path.join(crdDir, f), "utf8")) as Crd,
  }));
  const out = [
    generatedHeader("Custom resources", "`crds/*.yaml` (generated from `operator/crds/schema.ts`)"),
    table(
      ["kind", "group", "scope", "short names", "file"],
      crds.map(({ file, crd }) => [
        crd.spec.names.kind,
        code(crd.spec.group),
        crd.spec.scope,
        (crd.spec.names.shortNames ?? []).map(code).join(", "),
        code(`crds/${file}`),
      ]),
    ),
    "",
  ];
  for (const { file, crd } of crds) {
    const { names, group, scope } = crd.spec;
    out.push(`## ${names.kind}`, "");
    for (const v of crd.spec.versions) {
      const root = v.schema.openAPIV3Schema;
      out.push(
        `\`apiVersion: ${group}/${v.name}\`, \`kind: ${names.kind}\` — ${scope === "Cluster" ? "cluster-scoped" : "namespaced"}; ` +
          `plural \`${names.plural}\`${names.categories?.length ? `, categories ${names.categories.map(code).join(", ")}` : ""}; ` +
          `${v.served ? "served" : "not served"}${v.storage ? ", storage version" : ""} (\`crds/${file}\`).`,
        "",
      );
      if (root.description) out.push(root.description, "");
      if (v.additionalPrinterColumns?.length) {
        out.push(
          "**`kubectl get` columns**",
          "",
          table(
            ["column", "type", "JSONPath", "description"],
            v.additionalPrinterColumns.map((c) => [c.name, c.type, code(c.jsonPath), c.description ?? ""]),
          ),
          "",
        );
      }
      out.push(`### ${names.kind} spec`, "", fields(root.properties?.spec));
      out.push(`### ${names.kind} status`, "", fields(root.properties?.status));
      const cel = rules(root, "");
      if (cel.length)
        out.push(`### ${names.kind} validation rules (CEL)`, "", table(["at", "rule", "message"], cel), "");
    }
  }
  return `${out
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trimEnd()}\n`;
}
