/**
 * An MCP session of the face (server.ts) and how a call of it waits for approval: progress
 * notifications every `progressIntervalMs` naming the approval and its review URL, and one
 * URL-mode `elicitation/create` pointing at the review page for a client that declared it
 * (information only: its answer changes nothing).
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import {
  type ElicitRequestURLParams,
  ElicitResultSchema,
  type ServerNotification,
  type ServerRequest,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { WaitUpdate } from "../../core/approval-wait.js";
import type { Logger } from "../../logger.js";
import type { JsonObject } from "../../wire/struct.js";
import type { InvokeInput } from "../../wire/validate.js";

/** The MCP SDK's context of one request. */
export type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * What governed calls go into one chain of: a legacy MCP session, or one modern-era tools/call
 * (modern-calls.ts).
 */
export interface ChainOwner {
  /** The owner's chain, opened on its first governed tools/call. */
  chainId: Promise<string> | null;
  /** The id `chainId` resolved to (null before). */
  openedChainId: string | null;
  /** The chain's name and metadata (besides `upstream`), read when it is opened. */
  chainInfo(): { name: string; metadata: JsonObject };
}

/** One MCP session: its transport and server, and the chain its governed calls go into. */
export interface Session extends ChainOwner {
  transport: StreamableHTTPServerTransport;
  server: Server;
  /** ms timestamp of the last HTTP request of the session. */
  lastSeen: number;
  /** tools/call requests and tasks in progress. */
  active: number;
}

/** A task's governed call in progress: what withdrawing it needs (GovernedCalls.withdraw). */
export interface RunningCall {
  chainId: string | null;
  input: InvokeInput | null;
  controller: AbortController;
}

/** A task-augmented call of a legacy session in progress. */
export interface RunningTask extends RunningCall {
  session: Session;
}

/** What a waiting call does with status updates. */
export interface WaitReporter {
  onWait: (u: WaitUpdate) => void;
  done: () => void;
}

/** JSON-RPC params the face reads beyond what the SDK validates. */
const CallMetaSchema = z
  .object({ progressToken: z.union([z.string(), z.number()]).optional() })
  .loose()
  .optional();

/** The human-readable line of a wait: names the approval and the review URL. */
export function waitMessage(u: WaitUpdate): string {
  const policy = u.policyName ? ` (policy ${u.policyName})` : "";
  if (u.status === "pending")
    return `Waiting for approval ${u.approvalId}${policy}, ${Math.round(u.waitedMs / 1000)} s so far: review it at ${u.reviewUrl}`;
  return `Approval ${u.approvalId}${policy}: ${u.status.replace("_", " ")}`;
}

/** Progress notifications and URL elicitation for a waiting request (not a task). */
export function requestWaitReporter(
  session: Session,
  extra: Extra,
  progressIntervalMs: number,
  log: Logger,
): WaitReporter {
  const meta = CallMetaSchema.safeParse(extra._meta);
  const token = meta.success ? meta.data?.progressToken : undefined;
  let timer: NodeJS.Timeout | null = null;
  let n = 0;
  let elicited = false;
  const progress = (u: WaitUpdate) => {
    if (token === undefined) return;
    n++;
    extra
      .sendNotification({
        method: "notifications/progress",
        params: { progressToken: token, progress: n, message: waitMessage(u) },
      })
      .catch(() => undefined);
  };
  return {
    onWait: (u) => {
      if (u.status === "pending") {
        if (!elicited) {
          elicited = true;
          elicitReview(session, u, (params) => extra.sendRequest(params, ElicitResultSchema), log);
        }
        if (!timer) {
          const started = Date.now() - u.waitedMs;
          progress(u);
          timer = setInterval(() => progress({ ...u, waitedMs: Date.now() - started }), progressIntervalMs);
        }
        return;
      }
      if (timer) clearInterval(timer);
      timer = null;
      progress(u);
    },
    done: () => {
      if (timer) clearInterval(timer);
      timer = null;
    },
  };
}

/**
 * Sends `elicitation/create` (mode url) pointing at the review page when the client declared
 * URL-mode elicitation. Information only: the answer is logged, never acted on.
 */
export function elicitReview(
  session: Session,
  u: WaitUpdate,
  send: (request: { method: "elicitation/create"; params: ElicitRequestURLParams }) => Promise<unknown>,
  log: Logger,
): void {
  const caps = session.server.getClientCapabilities()?.elicitation as { url?: unknown } | undefined;
  if (!caps?.url) return;
  send({
    method: "elicitation/create",
    params: {
      mode: "url",
      message: `${waitMessage(u)}. The call continues by itself once a person decides there.`,
      elicitationId: u.approvalId,
      url: u.reviewUrl,
    },
  }).then(
    (answer) => log.debug({ approvalId: u.approvalId, answer }, "URL elicitation answered"),
    (err: Error) => log.debug({ approvalId: u.approvalId, err: err.message }, "URL elicitation failed"),
  );
}
