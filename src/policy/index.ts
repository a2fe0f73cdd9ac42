/**
 * The policy engine's public API: a pure function from (policy config, organization state, chain
 * state, action, exceptions, now) to a PolicyDecision, plus the helpers around it (fact
 * extraction, configuration merging, payload sanitization) and the data contract (schema).
 */
export * from "./engine.js";
export * from "./facts.js";
export * from "./merge.js";
export * from "./sanitize.js";
export * from "./schema.js";
