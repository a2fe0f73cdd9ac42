/**
 * The demo's scripted agent side: a real @grpc/grpc-js client of the sidecar's
 * tollgate.v1.ToolGateway with promise-returning calls; a refused Invoke comes back as a
 * {@link Refusal} carrying the decoded decision from the `tollgate-decision-bin` metadata.
 */
import type * as grpc from "@grpc/grpc-js";
import type { Decision__Output } from "../../sidecar/generated/tollgate/v1/Decision.js";
import { createGatewayClient, decodeDecision } from "../../sidecar/proto.js";
import { jsonToStruct, structToJson } from "../../sidecar/struct.js";

/** What an allowed Invoke returned. */
export interface Invoked {
  decision: Decision__Output;
  forwarded: boolean;
  /** The tool's result (parsed result_json), or null when nothing was forwarded. */
  result: unknown;
  upstreamError: boolean;
}

/** A refused Invoke: gRPC status, message, and the decision when the service made one. */
export class Refusal extends Error {
  constructor(
    readonly code: grpc.status,
    readonly details: string,
    readonly decision: Decision__Output | null,
  ) {
    super(`refused (${code}): ${details}`);
    this.name = "Refusal";
  }
}

/** A ToolGateway client of the sidecar at `address` (host:port). */
export function createAgent(address: string) {
  const client = createGatewayClient(address);
  const call = <Res>(method: string, req: unknown): Promise<Res> =>
    new Promise((resolve, reject) => {
      const fn = (client as unknown as Record<string, (...a: unknown[]) => unknown>)[method]!;
      fn.call(client, req, (err: grpc.ServiceError | null, res: Res) => {
        if (!err) return resolve(res);
        const bin = err.metadata?.get("tollgate-decision-bin")[0];
        reject(new Refusal(err.code, err.details, Buffer.isBuffer(bin) ? decodeDecision(bin) : null));
      });
    });
  return {
    /** Opens a chain; returns its id. */
    async openChain(name: string, metadata: Record<string, unknown> = {}): Promise<string> {
      const r = await call<{ chain_id: string }>("OpenChain", { name, metadata: jsonToStruct(metadata) });
      return r.chain_id;
    },
    /** Invokes a tool through the sidecar (upstream "" records and decides only). Rejects with Refusal. */
    async invoke(
      chainId: string,
      actionName: string,
      payload: Record<string, unknown>,
      upstream = "",
    ): Promise<Invoked> {
      const r = await call<{
        decision: Decision__Output;
        forwarded: boolean;
        result_json: string;
        upstream_error: boolean;
      }>("Invoke", {
        chain_id: chainId,
        agent_name: "research-agent",
        action_name: actionName,
        payload: jsonToStruct(payload),
        upstream,
      });
      return {
        decision: r.decision,
        forwarded: r.forwarded,
        result: r.result_json ? JSON.parse(r.result_json) : null,
        upstreamError: r.upstream_error,
      };
    },
    /** Completes the chain; returns status, receipt id and number. */
    completeChain(chainId: string) {
      return call<{ chain_id: string; status: string; receipt_id: string; receipt_number: string }>(
        "CompleteChain",
        { chain_id: chainId },
      );
    },
    /** The signed receipt of a completed chain. */
    async getReceipt(chainId: string): Promise<Record<string, unknown>> {
      const r = await call<{ receipt: Parameters<typeof structToJson>[0] }>("GetReceipt", {
        chain_id: chainId,
      });
      return structToJson(r.receipt);
    },
    close: () => client.close(),
  };
}
export type Agent = ReturnType<typeof createAgent>;
