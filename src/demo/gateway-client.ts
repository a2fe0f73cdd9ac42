/**
 * A gRPC client of the sidecar's `tollgate.v1.ToolGateway`, built at run time from the contract
 * (proto/tollgate/v1/gateway.proto) with @grpc/proto-loader — the way any client outside the
 * repository would build one; nothing of the sidecar's code is imported. Calls return promises;
 * a gRPC error becomes a {@link Refusal} with the decision decoded from `tollgate-decision-bin`.
 */
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { GATEWAY_PROTO, PROTO_LOADER_OPTIONS } from "../contract/v1/grpc.js";

/** Directory holding tollgate/v1/gateway.proto. */
const PROTO_ROOT = path.resolve(import.meta.dirname, "../../proto");

/** A decoded tollgate.v1.Decision (proto field names). */
export interface Decision {
  policy_decision: string;
  decision_reason: string;
  decision_source: string;
  policy_name?: string | null;
  [field: string]: unknown;
}

/** A refused call: gRPC status code, details, and the decision when the service made one. */
export class Refusal extends Error {
  constructor(
    readonly code: grpc.status,
    readonly details: string,
    readonly decision: Decision | null,
  ) {
    super(`refused (${grpc.status[code] ?? code}): ${details}`);
    this.name = "Refusal";
  }
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Value = {
  kind?: string;
  nullValue?: string;
  numberValue?: number;
  stringValue?: string;
  boolValue?: boolean;
  structValue?: Struct;
  listValue?: { values?: Value[] };
};
type Struct = { fields?: Record<string, Value> };

/** JSON → google.protobuf.Value in proto-loader's object shape. */
function toValue(v: unknown): Value {
  if (v === null || v === undefined) return { nullValue: "NULL_VALUE" };
  if (typeof v === "string") return { stringValue: v };
  if (typeof v === "number") return Number.isFinite(v) ? { numberValue: v } : { nullValue: "NULL_VALUE" };
  if (typeof v === "boolean") return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(toValue) } };
  return { structValue: toStruct(v as Record<string, unknown>) };
}

/** A JSON object → google.protobuf.Struct. */
export function toStruct(obj: Record<string, unknown>): Struct {
  return { fields: Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, toValue(v)])) };
}

/** google.protobuf.Value → JSON. */
function fromValue(v: Value | undefined): Json {
  switch (v?.kind) {
    case "stringValue":
      return v.stringValue ?? "";
    case "numberValue":
      return v.numberValue ?? 0;
    case "boolValue":
      return v.boolValue ?? false;
    case "structValue":
      return fromStruct(v.structValue);
    case "listValue":
      return (v.listValue?.values ?? []).map(fromValue);
    default:
      return null;
  }
}

/** google.protobuf.Struct → a JSON object. */
export function fromStruct(s: Struct | undefined): { [key: string]: Json } {
  return Object.fromEntries(Object.entries(s?.fields ?? {}).map(([k, v]) => [k, fromValue(v)]));
}

type Unary = (req: unknown, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void;
type GatewayClient = grpc.Client & Record<string, Unary>;

/** Loads the contract and connects (insecure: the sidecar listens on loopback) to `address`. */
export function connectGateway(address: string) {
  const definition = protoLoader.loadSync(GATEWAY_PROTO, {
    ...PROTO_LOADER_OPTIONS,
    includeDirs: [PROTO_ROOT],
  });
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    tollgate: { v1: { ToolGateway: grpc.ServiceClientConstructor } };
  };
  const Service = pkg.tollgate.v1.ToolGateway;
  const client = new Service(address, grpc.credentials.createInsecure()) as GatewayClient;
  const decodeDecision = (bin: Buffer) => Service.service.GetDecision!.responseDeserialize(bin) as Decision;

  /** One unary call; a gRPC error rejects with a Refusal. */
  const call = <Res>(method: string, req: unknown): Promise<Res> =>
    new Promise((resolve, reject) => {
      client[method]!.call(client, req, (err, res) => {
        if (!err) return resolve(res as Res);
        const bin = err.metadata?.get("tollgate-decision-bin")[0];
        reject(new Refusal(err.code, err.details, Buffer.isBuffer(bin) ? decodeDecision(bin) : null));
      });
    });

  return {
    /** Opens a chain; returns its id. */
    async openChain(name: string, metadata: Record<string, unknown>): Promise<string> {
      return (await call<{ chain_id: string }>("OpenChain", { name, metadata: toStruct(metadata) })).chain_id;
    },
    /** Invokes `actionName` through the sidecar (upstream "" decides and records only). */
    invoke(req: {
      chain_id: string;
      agent_name: string;
      action_name: string;
      upstream: string;
      payload: object;
    }) {
      return call<{ decision: Decision; forwarded: boolean; result_json: string; upstream_error: boolean }>(
        "Invoke",
        { ...req, payload: toStruct(req.payload as Record<string, unknown>) },
      );
    },
    /** Completes the chain: status, receipt id and number. */
    completeChain(chainId: string) {
      return call<{ chain_id: string; status: string; receipt_id: string; receipt_number: string }>(
        "CompleteChain",
        { chain_id: chainId },
      );
    },
    /** The signed receipt of a completed chain as JSON. */
    async getReceipt(chainId: string) {
      return fromStruct((await call<{ receipt: Struct }>("GetReceipt", { chain_id: chainId })).receipt);
    },
    close: () => client.close(),
  };
}
