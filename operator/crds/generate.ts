/**
 * Generates the CustomResourceDefinitions (apiextensions.k8s.io/v1) from the zod schemas in
 * ./schema.ts. Pure: returns plain objects and YAML text; scripts/gen-crds.ts writes the files and
 * a unit test fails when crds/*.yaml drift from this output.
 *
 * zod 4's `z.toJSONSchema` (OpenAPI 3.0 target, input types so defaulted fields are optional) is
 * post-processed into a Kubernetes structural schema: no `additionalProperties: false`, no
 * `$ref`, no safe-integer bounds, formats instead of zod's format regexes, and unions only where
 * marked `x-kubernetes-preserve-unknown-fields` (the operator validates those values itself).
 */
import { stringify } from "yaml";
import { z } from "zod";
import { GROUP, KINDS, type KindDefinition, ResourceStatusSchema, VERSION } from "./schema.js";

type JsonSchema = Record<string, unknown>;

/** Thrown when a zod schema cannot be expressed as a structural schema; names the JSON path. */
export class CrdSchemaError extends Error {
  constructor(path: string, problem: string) {
    super(`${path}: ${problem}`);
    this.name = "CrdSchemaError";
  }
}

const PRESERVE = "x-kubernetes-preserve-unknown-fields";

/**
 * Rewrites one JSON Schema node (and its children) into structural form. `path` is used in
 * error messages only.
 */
export function toStructural(node: JsonSchema, path = "$"): JsonSchema {
  if ("$ref" in node) throw new CrdSchemaError(path, "$ref is not allowed in a structural schema");
  if (node[PRESERVE] === true) {
    // A value the API server keeps as-is (e.g. a union); the operator validates it with zod.
    const out: JsonSchema = { [PRESERVE]: true };
    if (typeof node.description === "string") out.description = node.description;
    return out;
  }
  if ("anyOf" in node || "oneOf" in node || "allOf" in node) {
    throw new CrdSchemaError(path, `unions need .meta({ "${PRESERVE}": true })`);
  }
  if (typeof node.type !== "string") throw new CrdSchemaError(path, "every node needs a type");
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) {
    switch (key) {
      case "$schema":
        break;
      case "additionalProperties":
        if (value === false) break;
        if (value === true) out[PRESERVE] = true;
        else out.additionalProperties = toStructural(value as JsonSchema, `${path}.*`);
        break;
      case "properties": {
        const props: JsonSchema = {};
        for (const [name, child] of Object.entries(value as Record<string, JsonSchema>)) {
          props[name] = toStructural(child, `${path}.${name}`);
        }
        out.properties = props;
        break;
      }
      case "items":
        out.items = toStructural(value as JsonSchema, `${path}[]`);
        break;
      case "pattern":
        // Kubernetes checks formats itself; zod's regex for a format is noise (and may not be RE2).
        if (!("format" in node)) out.pattern = value;
        break;
      case "maximum":
        if (value !== Number.MAX_SAFE_INTEGER) out.maximum = value;
        break;
      case "minimum":
        if (value !== Number.MIN_SAFE_INTEGER) out.minimum = value;
        break;
      default:
        out[key] = value;
    }
  }
  return out;
}

/** The OpenAPI v3 schema of a zod schema, in structural form. */
export function structuralSchema(schema: z.ZodType): JsonSchema {
  const json = z.toJSONSchema(schema, { target: "openapi-3.0", io: "input", unrepresentable: "throw" });
  return toStructural(json as JsonSchema);
}

const condition = (type: string) => `.status.conditions[?(@.type=="${type}")].status`;

/** The CustomResourceDefinition object of one kind. */
export function crdFor(def: KindDefinition): Record<string, unknown> {
  const rootValidations =
    def.scope === "Namespaced"
      ? {
          "x-kubernetes-validations": [
            {
              rule: "size(self.metadata.name) <= 189",
              message:
                "metadata.name must be at most 189 characters (the service-side name is <namespace>.<name>)",
            },
          ],
        }
      : {};
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: {
      name: `${def.plural}.${GROUP}`,
      labels: { "app.kubernetes.io/name": "tollgate", "app.kubernetes.io/part-of": "tollgate" },
    },
    spec: {
      group: GROUP,
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: def.shortNames,
        categories: ["tollgate"],
      },
      scope: def.scope,
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            ...def.extraColumns,
            { name: "Ready", type: "string", jsonPath: condition("Ready"), description: "Ready condition." },
            {
              name: "Synced",
              type: "string",
              jsonPath: condition("Synced"),
              description: "Synced condition.",
            },
            { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
          ],
          schema: {
            openAPIV3Schema: {
              type: "object",
              description: def.description,
              required: ["spec"],
              properties: {
                apiVersion: { type: "string" },
                kind: { type: "string" },
                metadata: { type: "object" },
                spec: structuralSchema(def.spec),
                status: structuralSchema(def.status ?? ResourceStatusSchema),
              },
              ...rootValidations,
            },
          },
        },
      ],
    },
  };
}

/** File name (kubebuilder convention) and YAML text of every CRD, in KINDS order. */
export function renderCrds(): { file: string; yaml: string }[] {
  return Object.values(KINDS).map((def) => ({
    file: `${GROUP}_${def.plural}.yaml`,
    yaml: `# Generated by scripts/gen-crds.ts from operator/crds/schema.ts. Do not edit: run npm run gen:crds.\n${stringify(
      crdFor(def),
      { lineWidth: 0 },
    )}`,
  }));
}
