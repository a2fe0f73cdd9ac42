/**
 * google.protobuf.Struct / Value ⇄ plain JSON, in the object shape @grpc/proto-loader produces
 * with the shared options (`{ fields: { k: { kind: "stringValue", stringValue: "x" } } }`).
 * Numbers are doubles (proto Value has no integers); NaN and ±Infinity become null.
 */
import type { ListValue__Output } from "./generated/google/protobuf/ListValue.js";
import type { Struct, Struct__Output } from "./generated/google/protobuf/Struct.js";
import type { Value, Value__Output } from "./generated/google/protobuf/Value.js";

/** A JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
/** A JSON object. */
export type JsonObject = { [key: string]: Json };

/** Converts a decoded Struct (absent → {}) into a JSON object. */
export function structToJson(struct: Struct__Output | null | undefined): JsonObject {
  const out: JsonObject = {};
  const fields = struct?.fields;
  if (!fields) return out;
  for (const key of Object.keys(fields)) out[key] = valueToJson(fields[key]);
  return out;
}

/** Converts a decoded Value into JSON (an unset kind is null). */
export function valueToJson(value: Value__Output | null | undefined): Json {
  if (!value) return null;
  switch (value.kind) {
    case "stringValue":
      return value.stringValue ?? "";
    case "numberValue":
      return Number(value.numberValue ?? 0);
    case "boolValue":
      return value.boolValue ?? false;
    case "structValue":
      return structToJson(value.structValue);
    case "listValue":
      return listToJson(value.listValue);
    default:
      return null;
  }
}

function listToJson(list: ListValue__Output | null | undefined): Json[] {
  return (list?.values ?? []).map(valueToJson);
}

/** Converts a JSON object (anything JSON.stringify accepts) into a Struct message. */
export function jsonToStruct(obj: Record<string, unknown>): Struct {
  const fields: Record<string, Value> = {};
  for (const key of Object.keys(obj)) {
    const v = obj[key];
    if (v !== undefined) fields[key] = jsonToValue(v);
  }
  return { fields };
}

/** Converts a JSON value into a Value message; undefined and non-finite numbers become null. */
export function jsonToValue(v: unknown): Value {
  if (v === null || v === undefined) return { nullValue: "NULL_VALUE" };
  if (typeof v === "string") return { stringValue: v };
  if (typeof v === "number") return Number.isFinite(v) ? { numberValue: v } : { nullValue: "NULL_VALUE" };
  if (typeof v === "boolean") return { boolValue: v };
  if (typeof v === "bigint") return { numberValue: Number(v) };
  if (Array.isArray(v)) return { listValue: { values: v.map(jsonToValue) } };
  if (typeof v === "object") {
    const toJSON = (v as { toJSON?: () => unknown }).toJSON;
    if (typeof toJSON === "function") return jsonToValue(toJSON.call(v));
    return { structValue: jsonToStruct(v as Record<string, unknown>) };
  }
  return { nullValue: "NULL_VALUE" };
}
