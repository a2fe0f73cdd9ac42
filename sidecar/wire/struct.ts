/**
 * google.protobuf.Struct / Value ⇄ plain JSON, in the object shape @grpc/proto-loader produces
 * with the shared options (`{ fields: { k: { kind: "stringValue", stringValue: "x" } } }`).
 * Numbers are doubles (proto Value has no integers); NaN and ±Infinity become null.
 */
import type { ListValue__Output } from "../generated/google/protobuf/ListValue.js";
import type { Struct, Struct__Output } from "../generated/google/protobuf/Struct.js";
import type { Value, Value__Output } from "../generated/google/protobuf/Value.js";

/** A JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
/** A JSON object. */
export type JsonObject = { [key: string]: Json };

/** Converts a decoded Struct (absent → {}) into a JSON object. */
export function structToJson(struct: Struct__Output | null | undefined): JsonObject {
  return convertStruct(struct, { bound: 0 });
}

/**
 * structToJson, plus an upper bound of the UTF-8 size of the result's JSON.stringify in bytes,
 * counted on the way: a UTF-16 unit of a string or key takes at most 6 bytes (the escape
 * `\u001f`; non-ASCII takes at most 3), a number at most 24 (`-2.2250738585072014e-308`).
 * Lets a size limit pass most payloads without serializing them.
 */
export function structToJsonSized(struct: Struct__Output | null | undefined): {
  json: JsonObject;
  sizeBound: number;
} {
  const size = { bound: 0 };
  const json = convertStruct(struct, size);
  return { json, sizeBound: size.bound };
}

/** Converts a decoded Value into JSON (an unset kind is null). */
export function valueToJson(value: Value__Output | null | undefined): Json {
  return convertValue(value, { bound: 0 });
}

/**
 * Sets an own property, also for the key "__proto__" (a plain assignment would replace the
 * object's prototype instead, and the field would vanish from the payload).
 */
function setField<T>(obj: Record<string, T>, key: string, value: T): void {
  if (key === "__proto__")
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/** The running size bound of one conversion (see structToJsonSized). */
interface Size {
  bound: number;
}

function convertStruct(struct: Struct__Output | null | undefined, size: Size): JsonObject {
  const out: JsonObject = {};
  size.bound += 2;
  const fields = struct?.fields;
  if (!fields) return out;
  for (const key of Object.keys(fields)) {
    size.bound += 4 + 6 * key.length; // "key": and the comma
    setField(out, key, convertValue(fields[key], size));
  }
  return out;
}

function convertValue(value: Value__Output | null | undefined, size: Size): Json {
  if (value) {
    switch (value.kind) {
      case "stringValue": {
        const text = value.stringValue ?? "";
        size.bound += 2 + 6 * text.length;
        return text;
      }
      case "numberValue":
        size.bound += 24;
        return Number(value.numberValue ?? 0);
      case "boolValue":
        size.bound += 5;
        return value.boolValue ?? false;
      case "structValue":
        return convertStruct(value.structValue, size);
      case "listValue":
        return convertList(value.listValue, size);
    }
  }
  size.bound += 4;
  return null;
}

function convertList(list: ListValue__Output | null | undefined, size: Size): Json[] {
  const values = list?.values ?? [];
  const out: Json[] = new Array(values.length);
  size.bound += 2 + values.length; // brackets and commas
  for (let i = 0; i < values.length; i++) out[i] = convertValue(values[i], size);
  return out;
}

/** Converts a JSON object (anything JSON.stringify accepts) into a Struct message. */
export function jsonToStruct(obj: Record<string, unknown>): Struct {
  const fields: Record<string, Value> = {};
  for (const key of Object.keys(obj)) {
    const v = obj[key];
    if (v !== undefined) setField(fields, key, jsonToValue(v));
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
