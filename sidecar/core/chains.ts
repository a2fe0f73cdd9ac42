/**
 * The chain registry: the chains opened through this sidecar and not yet completed, each with
 * its decision queue and its approval wait, and the ids of recently completed ones, so that a
 * late call gets CHAIN_COMPLETED rather than NOT_FOUND.
 */
import type { Chain } from "../../src/sdk/index.js";
import { ErrorCode, GatewayError } from "../wire/errors.js";
import type { ApprovalWait } from "./approval-wait.js";
import { DecisionQueue } from "./decision-queue.js";

/** One chain opened here. */
export interface ChainEntry {
  readonly chain: Chain;
  readonly chainId: string;
  /** The call of this chain that waits for approval, or whose outcome nobody received yet. */
  wait: ApprovalWait | null;
  readonly queue: DecisionQueue;
}

/** Completed chains remembered so that late calls get CHAIN_COMPLETED rather than NOT_FOUND. */
const COMPLETED_MEMORY = 10_000;

/** See the module comment. */
export class ChainRegistry {
  readonly #open = new Map<string, ChainEntry>();
  readonly #completed = new Set<string>();

  /** Chains open here. */
  get size(): number {
    return this.#open.size;
  }

  /** Registers a chain that was entered (has its id). */
  add(chain: Chain): ChainEntry {
    const entry: ChainEntry = { chain, chainId: chain.chainId!, wait: null, queue: new DecisionQueue() };
    this.#open.set(entry.chainId, entry);
    return entry;
  }

  /** The open chain `chainId`, or undefined when it was not opened here or is completed. */
  find(chainId: string): ChainEntry | undefined {
    return this.#open.get(chainId);
  }

  /**
   * The open chain `chainId`.
   * @throws GatewayError CHAIN_COMPLETED (completed recently) or NOT_FOUND.
   */
  get(chainId: string): ChainEntry {
    const entry = this.#open.get(chainId);
    if (entry) return entry;
    if (this.#completed.has(chainId))
      throw new GatewayError(ErrorCode.CHAIN_COMPLETED, "chain_id: the chain is completed");
    throw new GatewayError(
      ErrorCode.NOT_FOUND,
      "chain_id: unknown chain (open it with OpenChain on this sidecar)",
    );
  }

  /** Forgets an open chain (if any) and remembers it as completed. */
  completed(chainId: string): void {
    this.#open.delete(chainId);
    this.#completed.add(chainId);
    if (this.#completed.size > COMPLETED_MEMORY)
      this.#completed.delete(this.#completed.values().next().value!);
  }
}
