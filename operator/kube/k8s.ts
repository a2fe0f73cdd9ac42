/**
 * The one import point of @kubernetes/client-node inside the operator: loads ./compat.ts first
 * so the client works on Node.js 20 (see there).
 */
import "./compat.js";

export * from "@kubernetes/client-node";
