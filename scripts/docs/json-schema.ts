/** Short, human-readable summaries of JSON Schema nodes (OpenAPI 3.1, CRD openAPIV3Schema, zod's toJSONSchema). */

export interface JsonSchema {
  type?: string | string[];
  format?: string;
  enum?: unknown[];
  const?: unknown;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  additionalProperties?: boolean | JsonSchema;
  required?: string[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  default?: unknown;
  description?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  nullable?: boolean;
  $ref?: string;
  [key: string]: unknown;
}

/** The type of a node in a few words: `string (uuid)`, `array of object`, `"a" \| "b"`, `integer \| null`. */
export function typeOf(s: JsonSchema | undefined): string {
  if (!s) return "any";
  if (s.$ref) return s.$ref.split("/").pop() ?? "object";
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(" | ");
  const alts = s.anyOf ?? s.oneOf;
  if (alts) return [...new Set(alts.map(typeOf))].join(" | ");
  if (s.allOf?.length === 1) return typeOf(s.allOf[0]);
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  const one = (t: string): string => {
    if (t === "array") return `array of ${typeOf(s.items)}`;
    if (t === "string" && s.format) return `string (${s.format})`;
    if (t === "object" && !s.properties && typeof s.additionalProperties === "object")
      return `map of ${typeOf(s.additionalProperties)}`;
    return t;
  };
  const out = types.map(one);
  if (s.nullable) out.push("null");
  return out.join(" | ") || (s.properties ? "object" : "any");
}

/** Constraints of a node in a few words: `1–200 chars`, `≥ 0`, `pattern ^…$`. */
export function constraintsOf(s: JsonSchema | undefined): string {
  if (!s) return "";
  const alts = s.anyOf ?? s.oneOf;
  if (alts) return alts.map(constraintsOf).filter(Boolean).join("; ");
  const parts: string[] = [];
  parts.push(range(s.minLength, s.maxLength, "chars"));
  if (s.minimum !== undefined) parts.push(`≥ ${s.minimum}`);
  if (s.exclusiveMinimum !== undefined) parts.push(`> ${s.exclusiveMinimum}`);
  if (s.maximum !== undefined) parts.push(`≤ ${s.maximum}`);
  if (s.exclusiveMaximum !== undefined) parts.push(`< ${s.exclusiveMaximum}`);
  parts.push(range(s.minItems, s.maxItems, "items"));
  if (s.pattern && s.format === undefined && s.pattern.length <= 80) parts.push(`pattern \`${s.pattern}\``);
  return parts.filter(Boolean).join(", ");
}

function range(min: number | undefined, max: number | undefined, unit: string): string {
  if (min !== undefined && max !== undefined) return `${min}–${max} ${unit}`;
  if (min !== undefined) return min > 1 ? `≥ ${min} ${unit}` : min === 1 ? "not empty" : "";
  return max !== undefined ? `≤ ${max} ${unit}` : "";
}

/** Every property under `s`, depth first, as dotted paths (`a.b`, `list[].c`), at most `depth` levels. */
export function flatten(
  s: JsonSchema,
  depth = 6,
  prefix = "",
): { path: string; schema: JsonSchema; required: boolean }[] {
  const out: { path: string; schema: JsonSchema; required: boolean }[] = [];
  if (depth <= 0) return out;
  const target =
    s.items && (s.type === "array" || (Array.isArray(s.type) && s.type.includes("array"))) ? s.items : s;
  const props = target.properties ?? {};
  const base = target === s ? prefix : `${prefix}[]`;
  for (const [name, child] of Object.entries(props)) {
    const p = base ? `${base}.${name}` : name;
    out.push({ path: p, schema: child, required: (target.required ?? []).includes(name) });
    const inner = child.anyOf?.find((a) => a.type !== "null") ?? child;
    if (inner.properties || inner.items?.properties) out.push(...flatten(inner, depth - 1, p));
  }
  return out;
}
