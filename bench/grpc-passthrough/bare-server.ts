/**
 * The baseline of bench/grpc-passthrough: a bare @grpc/grpc-js server, in its own process,
 * serving the same two exchanges as the sidecar with none of the sidecar's code:
 * - tollgate.v1.ToolGateway/Invoke (the same .proto and proto-loader options) answered at once
 *   with the sidecar's NOT_FOUND status, details and `tollgate-error-code` trailer, so that
 *   the bytes on the wire are the sidecar's both ways;
 * - grpc.health.v1.Health/Check through grpc-health-check, as the sidecar registers it.
 * Channelz is off, as in the sidecar (a per-call cost nothing reads); other options default.
 * Prints the bound port on stdout.
 *
 *   node --import tsx bench/grpc-passthrough/bare-server.ts
 */
import * as grpc from "@grpc/grpc-js";
import { HealthImplementation } from "grpc-health-check";
import { gatewayService, SERVICE_NAME } from "../../sidecar/wire/proto.js";

/** What the sidecar answers an Invoke for a chain it did not open (sidecar/core/governor.ts). */
export const NOT_FOUND_DETAILS = "chain_id: unknown chain (open it with OpenChain on this sidecar)";

const server = new grpc.Server({ "grpc.enable_channelz": 0 });
const notFound = (): Partial<grpc.ServiceError> => {
  const metadata = new grpc.Metadata();
  metadata.set("tollgate-error-code", "NOT_FOUND");
  return { code: grpc.status.NOT_FOUND, details: NOT_FOUND_DETAILS, metadata };
};
const unimplemented = (_call: unknown, callback: grpc.sendUnaryData<unknown>) =>
  callback({ code: grpc.status.UNIMPLEMENTED });
server.addService(gatewayService(), {
  Invoke: (_call: unknown, callback: grpc.sendUnaryData<unknown>) => callback(notFound()),
  OpenChain: unimplemented,
  CompleteChain: unimplemented,
  GetReceipt: unimplemented,
  GetDecision: unimplemented,
});
new HealthImplementation({ "": "SERVING", [SERVICE_NAME]: "SERVING" }).addToServer(server);
server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err;
  process.stdout.write(`${port}\n`);
});
process.on("SIGTERM", () => server.tryShutdown(() => process.exit(0)));
