/**
 * The tools the MCP face mirrors: the upstream's tools/list, cached for `ttlMs` and fetched again
 * when a name is missing, and each tool's inputSchema compiled once (Ajv, through the MCP SDK's
 * validator) so that arguments are checked before a call is governed.
 */

import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import type { JsonSchemaType, JsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";
import type { McpUpstream, McpTool as Tool } from "../../upstreams/mcp.js";

/** How long a tools/list answer is reused, in ms. */
const DEFAULT_TTL_MS = 30_000;

/** What checking arguments against a tool's inputSchema found. */
export type ArgumentCheck = { valid: true } | { valid: false; message: string };

/** See the module comment. */
export class ToolCatalog {
  readonly #upstream: McpUpstream;
  readonly #ttlMs: number;
  readonly #ajv = new AjvJsonSchemaValidator();
  #cache: { at: number; tools: Tool[]; byName: Map<string, Tool> } | null = null;
  readonly #validators = new Map<Tool, JsonSchemaValidator<unknown>>();

  constructor(upstream: McpUpstream, ttlMs = DEFAULT_TTL_MS) {
    this.#upstream = upstream;
    this.#ttlMs = ttlMs;
  }

  /** The upstream's tools (cached). @throws the upstream's error when it cannot list them. */
  async list(signal?: AbortSignal): Promise<Tool[]> {
    return (await this.#load(signal, false)).tools;
  }

  /** The tool named `name`, or null when the upstream has none (after a fresh tools/list). */
  async find(name: string, signal?: AbortSignal): Promise<Tool | null> {
    const cached = await this.#load(signal, false);
    return cached.byName.get(name) ?? (await this.#load(signal, true)).byName.get(name) ?? null;
  }

  /** Checks `args` against the tool's inputSchema. */
  check(tool: Tool, args: unknown): ArgumentCheck {
    let validate = this.#validators.get(tool);
    if (!validate) {
      validate = this.#ajv.getValidator(tool.inputSchema as JsonSchemaType);
      this.#validators.set(tool, validate);
    }
    const r = validate(args);
    return r.valid ? { valid: true } : { valid: false, message: r.errorMessage };
  }

  async #load(signal: AbortSignal | undefined, fresh: boolean) {
    if (!fresh && this.#cache && Date.now() - this.#cache.at < this.#ttlMs) return this.#cache;
    const tools = await this.#upstream.listTools(signal);
    this.#cache = { at: Date.now(), tools, byName: new Map(tools.map((t) => [t.name, t])) };
    return this.#cache;
  }
}
