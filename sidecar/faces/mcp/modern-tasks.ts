/**
 * The tasks of the modern era (MCP 2026-07-28 with the `io.modelcontextprotocol/tasks`
 * extension, SEP-2663, as specified in modelcontextprotocol/ext-tasks
 * specification/2026-07-28/tasks.md): a tools/call that waits for approval answers with a task
 * handle (`resultType: "task"`) when the request declared the extension; the client polls
 * `tasks/get`, may answer the review input request with `tasks/update` and abandon the call
 * with `tasks/cancel`. There is no `tasks/list`.
 *
 * The tasks live in the face's GovernedTaskStore (tasks.ts, shared with the legacy tasks of
 * 2025-11-25) under the owner key `modern:<agent name>`: a task of a legacy session or of
 * another agent is not found, and the task survives the client's disconnection (the sidecar
 * process holds it; not a restart). Task ids are the store's (128 random bits, hex).
 *
 * States (the task's statusMessage names the approval and its review URL while it waits):
 * - `input_required` while the approval is pending and the client declared URL-mode
 *   elicitation and has not answered it: `inputRequests.review` is the URL-mode
 *   `elicitation/create` of the approver's review page (information only, as in
 *   modern-calls.ts: only the approver decides); a `tasks/update` answering `review` moves it to
 *   `working`;
 * - `working` while the approval is pending otherwise;
 * - `completed` with the CallToolResult once the call ended: the tool's result after the
 *   approval, or the refusal (a tool error result, `isError`), as a plain modern call answers;
 *   `failed` is not used (the spec keeps it for JSON-RPC errors, which a governed call does not
 *   end in);
 * - `cancelled` after `tasks/cancel`: the call is withdrawn (never forwarded), the approval
 *   withdrawn at the service.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { WaitUpdate } from "../../core/approval-wait.js";
import type { Logger } from "../../logger.js";
import { invalidArgument } from "../../wire/errors.js";
import type { JsonObject } from "../../wire/struct.js";
import { waitMessage } from "./session.js";
import { type GovernedTaskStore, isTerminalTaskError } from "./tasks.js";

/** The extension's identifier (capabilities `extensions` key). */
export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

/** What the store's task ids look like: anything else is not found without a lookup. */
const TASK_ID_PATTERN = /^[0-9a-f]{32}$/;

/** The Task of the extension (schema.ts `Task`). */
export interface ModernTask {
  taskId: string;
  status: "working" | "input_required" | "completed" | "failed" | "cancelled";
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  /** ms from creation the task is kept; null for unlimited. */
  ttlMs: number | null;
  /** Suggested ms between tasks/get. */
  pollIntervalMs?: number;
}

/** tasks/get: the Task with its status's payload (schema.ts `DetailedTask`). */
export type DetailedTask = ModernTask & {
  inputRequests?: Record<string, JsonObject>;
  result?: CallToolResult;
};

/** A task's state besides the store's. */
interface Entry {
  /** The outstanding review input request, until answered or the call ended. */
  review: JsonObject | null;
  /** Withdraws the call behind the task (never rejects). */
  withdraw: () => Promise<void>;
}

/** Options of ModernTasks. */
export interface ModernTaskOptions {
  store: GovernedTaskStore;
  /** The agent the sidecar calls for (TOLLGATE_AGENT_NAME): tasks are bound to it. */
  agentName: string;
  /** ms a task is kept (covers the approval timeout). */
  ttlMs: number;
  /** Suggested ms between tasks/get. */
  pollIntervalMs: number;
  log: Logger;
}

/** See the module comment. */
export class ModernTasks {
  readonly #o: ModernTaskOptions;
  readonly #owner: string;
  readonly #entries = new Map<string, Entry>();

  constructor(options: ModernTaskOptions) {
    this.#o = options;
    this.#owner = `modern:${options.agentName}`;
  }

  /**
   * Creates the task of a call waiting for approval `u` (durable before it is returned, as the
   * spec requires). `withdraw` is called on tasks/cancel.
   */
  async create(
    u: WaitUpdate,
    review: JsonObject | null,
    withdraw: () => Promise<void>,
  ): Promise<ModernTask & { resultType: "task" }> {
    const { store } = this.#o;
    const created = await store.createTask(
      { ttl: this.#o.ttlMs, pollInterval: this.#o.pollIntervalMs },
      0,
      { method: "tools/call" },
      this.#owner,
    );
    this.#entries.set(created.taskId, { review, withdraw });
    await store.updateTaskStatus(
      created.taskId,
      review ? "input_required" : "working",
      waitMessage(u),
      this.#owner,
    );
    return { resultType: "task", ...(await this.#task(created.taskId)) };
  }

  /**
   * Stores the call's result, as the call would have answered it (`resultType: "complete"`): the
   * task is completed (a no-op once cancelled).
   */
  async settle(taskId: string, result: CallToolResult): Promise<void> {
    this.#entries.delete(taskId);
    try {
      await this.#o.store.storeTaskResult(
        taskId,
        "completed",
        { ...result, resultType: "complete" },
        this.#owner,
      );
    } catch (err) {
      if (!isTerminalTaskError(err)) this.#o.log.error({ err }, "could not store an MCP task result");
    }
  }

  /** tasks/get. @throws GatewayError INVALID_ARGUMENT (field taskId) when not found here. */
  async get(taskId: string): Promise<DetailedTask> {
    const task = await this.#task(taskId);
    const entry = this.#entries.get(taskId);
    if (task.status === "input_required" && entry?.review)
      return { ...task, inputRequests: { review: entry.review } };
    if (task.status === "completed")
      return { ...task, result: (await this.#o.store.getTaskResult(taskId, this.#owner)) as CallToolResult };
    return task;
  }

  /**
   * tasks/update: an answer to `review` (whatever it says) moves the task to `working`; other
   * keys are ignored (spec "Task Update Requests").
   * @throws GatewayError INVALID_ARGUMENT (field taskId) when not found here.
   */
  async update(taskId: string, inputResponses: Record<string, unknown>): Promise<void> {
    const task = await this.#task(taskId);
    const entry = this.#entries.get(taskId);
    if (!entry?.review || !("review" in inputResponses)) return;
    entry.review = null;
    if (task.status === "input_required")
      await this.#o.store.updateTaskStatus(taskId, "working", undefined, this.#owner).catch(() => undefined);
  }

  /**
   * tasks/cancel: the task is cancelled and its call withdrawn; a task already terminal stays as
   * it is (cancellation is cooperative).
   * @throws GatewayError INVALID_ARGUMENT (field taskId) when not found here.
   */
  async cancel(taskId: string): Promise<void> {
    await this.#task(taskId);
    const entry = this.#entries.get(taskId);
    if (!entry) return;
    this.#entries.delete(taskId);
    await this.#o.store
      .updateTaskStatus(taskId, "cancelled", "Cancelled by the client: the call was withdrawn", this.#owner)
      .catch(() => undefined);
    await entry.withdraw();
  }

  /** The task `taskId` of this agent. @throws GatewayError INVALID_ARGUMENT (field taskId) */
  async #task(taskId: string): Promise<ModernTask> {
    const t = TASK_ID_PATTERN.test(taskId) ? await this.#o.store.getTask(taskId, this.#owner) : null;
    if (!t) throw invalidArgument("taskId", "Failed to retrieve task: Task not found");
    return {
      taskId: t.taskId,
      status: t.status,
      ...(t.statusMessage && { statusMessage: t.statusMessage }),
      createdAt: t.createdAt,
      lastUpdatedAt: t.lastUpdatedAt,
      ttlMs: t.ttl ?? null,
      pollIntervalMs: t.pollInterval ?? this.#o.pollIntervalMs,
    };
  }
}
