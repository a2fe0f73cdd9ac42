/**
 * What the recording hot path remembers between actions of a chain (docs/adr/0006): the chain
 * row as this process last wrote it, with its PostgreSQL row version (`xmin`), the organization
 * state that decided it, and the chain's merged policy configuration.
 *
 * Nothing here is trusted on its own: every write that uses a remembered state is guarded in
 * the same statement by the chain's `xmin` (any other writer — another replica, an approval,
 * a completion — changes it) and by the organization's config_version, kill switch and pause
 * flags. A failed guard drops the entry and the caller reads the database again.
 */
import type { PolicyConfig } from "../../policy/schema.js";
import type { ChainSnapshot } from "./store.js";

/** A chain as last read or written by this process, with its merged policy configuration. */
export interface CachedChain extends ChainSnapshot {
  /** The org config merged with the chain's policy_config, for org config `version`. */
  merged?: {
    version: string;
    config: PolicyConfig;
    /** Whether an expression of `config` reads `chain.actions` (policy configUsesChainActions). */
    usesChainActions: boolean;
  };
}

/** Chains remembered at most; the least recently used entry goes first. */
const DEFAULT_CAPACITY = 10_000;

/** A bounded LRU map chain_id → CachedChain (see the module comment). */
export class ChainSnapshotCache {
  readonly #entries = new Map<string, CachedChain>();
  constructor(private readonly capacity = DEFAULT_CAPACITY) {}

  /** The remembered state of an open chain of `orgId`, or undefined. */
  get(chainId: string, orgId: string): CachedChain | undefined {
    const s = this.#entries.get(chainId);
    if (!s || s.row.org_id !== orgId) return undefined;
    this.#entries.delete(chainId);
    this.#entries.set(chainId, s);
    return s;
  }

  /** Remembers the state of an open chain; forgets chains in any other status. */
  set(state: CachedChain): void {
    this.#entries.delete(state.row.id);
    if (state.row.status !== "open") return;
    this.#entries.set(state.row.id, state);
    if (this.#entries.size > this.capacity) {
      this.#entries.delete(this.#entries.keys().next().value as string);
    }
  }

  /** Forgets a chain. */
  delete(chainId: string): void {
    this.#entries.delete(chainId);
  }

  get size(): number {
    return this.#entries.size;
  }
}
