/**
 * Node.js 20 compatibility for @kubernetes/client-node 2.x. Its HTTP stack, undici 8, declares
 * Node >= 22.19 and touches three newer built-ins while loading or fetching:
 * `zlib.createZstdDecompress` (bound at load time; only used for zstd-encoded responses, which
 * the API server does not send unless asked), `worker_threads.markAsUncloneable` (a structured-
 * clone guard) and `Promise.withResolvers`. This module fills them in when missing and must be
 * evaluated before the client loads: import the client through ./k8s.ts, never directly.
 * On Node >= 22.19 it changes nothing.
 */
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const zlib = require("node:zlib") as Record<string, unknown>;
const workerThreads = require("node:worker_threads") as Record<string, unknown>;

if (typeof zlib.createZstdDecompress !== "function") {
  zlib.createZstdDecompress = () => {
    throw new Error("zstd content-encoding is not supported on this Node.js version");
  };
}
if (typeof workerThreads.markAsUncloneable !== "function") {
  workerThreads.markAsUncloneable = () => {};
}
const P = Promise as unknown as { withResolvers?: () => unknown };
if (typeof P.withResolvers !== "function") {
  P.withResolvers = <T>() => {
    let resolve!: (value: T | PromiseLike<T>) => void;
    let reject!: (reason?: unknown) => void;
    const promise = new Promise<T>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}
