/**
 * parsePayload skips serializing payloads whose size bound (counted while converting the
 * Struct) is within the limit; it must still accept exactly the payloads whose JSON has at
 * most the limit in UTF-8 bytes.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Struct__Output } from "../../sidecar/generated/google/protobuf/Struct.js";
import type { InvokeRequest__Output } from "../../sidecar/generated/tollgate/v1/InvokeRequest.js";
import { gatewayService } from "../../sidecar/wire/proto.js";
import { jsonToStruct, structToJson, structToJsonSized } from "../../sidecar/wire/struct.js";
import { parsePayload } from "../../sidecar/wire/validate.js";

/** A payload as the gRPC server hands it over: a Struct through protobuf and proto-loader. */
function decoded(payload: Record<string, unknown>): Struct__Output {
  const invoke = gatewayService().Invoke!;
  const bytes = invoke.requestSerialize({ payload: jsonToStruct(payload) });
  return (invoke.requestDeserialize(bytes) as InvokeRequest__Output).payload!;
}

const accepts = (struct: Struct__Output, limit: number) => {
  try {
    parsePayload(struct, limit);
    return true;
  } catch {
    return false;
  }
};

describe("parsePayload size limit", () => {
  it("accepts a payload exactly when its JSON fits the limit", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.nat(400), (payload, limit) => {
        const struct = decoded(payload);
        const exact = Buffer.byteLength(JSON.stringify(structToJson(struct)));
        expect(accepts(struct, limit)).toBe(exact <= limit);
      }),
      { numRuns: 1000 },
    );
  });

  it("bounds escapes, non-ASCII, surrogates and long numbers from above", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (text) => {
        const { json, sizeBound } = structToJsonSized(
          decoded({ [text]: [text, -2.2250738585072014e-308, null, true, { [text]: false }] }),
        );
        expect(Buffer.byteLength(JSON.stringify(json))).toBeLessThanOrEqual(sizeBound);
      }),
      { numRuns: 1000 },
    );
  });

  it("names the size when the payload is too large", () => {
    expect(() => parsePayload(decoded({ blob: "x".repeat(100) }), 50)).toThrow(
      "is 111 bytes as JSON; at most 50 are accepted",
    );
  });
});

describe("Struct conversion", () => {
  it("keeps a payload key named __proto__ as a field, both ways", () => {
    const payload = JSON.parse('{"__proto__": {"x": 1}, "a": "b"}') as Record<string, unknown>;
    const back = structToJson(decoded(payload));
    expect(Object.keys(back)).toEqual(["__proto__", "a"]);
    expect(JSON.stringify(back)).toBe('{"__proto__":{"x":1},"a":"b"}');
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
  });
});
