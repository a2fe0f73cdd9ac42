/**
 * How the gRPC contract (proto/tollgate/v1/gateway.proto) is loaded with @grpc/proto-loader: the
 * one shared set of options (STYLE.md grpc-node: keepCase, longs String, enums String, defaults,
 * oneofs) used by the sidecar, the demo's agent client, the tests and the bench, and by
 * `npm run gen:proto` for the types in sidecar/generated (keep them in step). Each loader adds
 * the directory holding the protos as includeDirs.
 */
import type { Options } from "@grpc/proto-loader";

/** The gateway contract, relative to the directory holding `tollgate/v1/*.proto`. */
export const GATEWAY_PROTO = "tollgate/v1/gateway.proto";

/** The shared proto-loader options (without includeDirs). */
export const PROTO_LOADER_OPTIONS: Readonly<Options> = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};
