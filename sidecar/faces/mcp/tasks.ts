/**
 * The task store of the MCP face (MCP 2025-11-25 "Tasks"; @modelcontextprotocol/sdk experimental
 * tasks): the SDK's InMemoryTaskStore, one for all sessions of the sidecar (tasks are bound to
 * the session that created them, so a client that reconnects with its session id finds them),
 * with two additions: a stored result replaces the waiting status message, and when a client
 * cancels a task (tasks/cancel), `onCancel` withdraws the governed call behind it
 * (core/approval-wait.ts: never forwarded).
 *
 * The SDK installs tasks/get, tasks/result, tasks/list (an unknown cursor is -32602) and
 * tasks/cancel over this store.
 */
import { InMemoryTaskStore } from "@modelcontextprotocol/sdk/experimental/tasks";
import type { Result, Task } from "@modelcontextprotocol/sdk/types.js";

/** See the module comment. */
export class GovernedTaskStore extends InMemoryTaskStore {
  /** Called after a task was moved to `cancelled` (by tasks/cancel). */
  onCancel: (taskId: string) => void = () => undefined;

  override async updateTaskStatus(
    taskId: string,
    status: Task["status"],
    statusMessage?: string,
    sessionId?: string,
  ): Promise<void> {
    await super.updateTaskStatus(taskId, status, statusMessage, sessionId);
    if (status === "cancelled") this.onCancel(taskId);
  }

  /**
   * Stores the final result. The store keeps the last status message, which while the call
   * waited was "Waiting for approval …": a completed task would go on saying so (issue 29). The
   * message says how the call ended first.
   * @throws Error when the task is unknown or already terminal (isTerminalTaskError)
   */
  override async storeTaskResult(
    taskId: string,
    status: "completed" | "failed",
    result: Result,
    sessionId?: string,
  ): Promise<void> {
    const message = status === "completed" ? "Completed" : "Failed: the tool call ended in an error";
    await super.updateTaskStatus(taskId, "working", message, sessionId);
    await super.storeTaskResult(taskId, status, result, sessionId);
  }
}

/** True for the store's refusal to change a task that is already completed, failed or cancelled. */
export const isTerminalTaskError = (err: unknown): boolean =>
  err instanceof Error && /terminal status|not found/i.test(err.message);
