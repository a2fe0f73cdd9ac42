"""A real Python MCP client (the `mcp` package from PyPI) waiting through an approval at the
Tollgate sidecar's MCP face. Run by test/sidecar/approval-wait-mcp.test.ts:

    python mcp_wait_client.py <mcp url> <mode> <tool> <arguments as JSON>

Modes:
  progress  tools/call with a progress callback and no per-request timeout (the Python client
            has no reset-on-progress): the progress notifications arrive while it waits
  task      task-augmented tools/call: the task comes back at once, polled to the end
  retry     tools/call with a 3 s read timeout, retried after each timeout with the same
            arguments until the result arrives

Prints one JSON object on stdout: the result and what the client saw on the way.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import timedelta
from typing import Any

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError
from mcp.types import CallToolResult


def result_json(result: CallToolResult) -> dict[str, Any]:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def run(url: str, mode: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"mode": mode}
    started = time.monotonic()
    async with streamable_http_client(url) as (read, write, _get_session_id):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["protocol_version"] = init.protocolVersion
            out["server_tasks"] = init.capabilities.tasks is not None
            if mode == "progress":
                progress: list[dict[str, Any]] = []

                async def on_progress(value: float, total: float | None, message: str | None) -> None:
                    progress.append({"progress": value, "message": message, "at": time.monotonic() - started})

                result = await session.call_tool(tool, arguments, progress_callback=on_progress)
                out["progress"] = progress
                out["result"] = result_json(result)
            elif mode == "task":
                created = await session.experimental.call_tool_as_task(tool, arguments, ttl=60_000)
                out["created"] = {
                    "status": created.task.status,
                    "ttl": created.task.ttl,
                    "after_s": time.monotonic() - started,
                }
                statuses: list[dict[str, Any]] = []
                async for status in session.experimental.poll_task(created.task.taskId):
                    statuses.append({"status": status.status, "message": status.statusMessage})
                out["statuses"] = statuses
                listed = await session.experimental.list_tasks()
                out["listed"] = [t.taskId for t in listed.tasks]
                out["task_id"] = created.task.taskId
                result = await session.experimental.get_task_result(created.task.taskId, CallToolResult)
                out["result"] = result_json(result)
            elif mode == "retry":
                attempts: list[str] = []
                while True:
                    try:
                        result = await session.call_tool(
                            tool, arguments, read_timeout_seconds=timedelta(seconds=3)
                        )
                        attempts.append("result")
                        break
                    except McpError as err:
                        attempts.append(f"error {err.error.code}: {err.error.message}")
                        if len(attempts) > 40:
                            raise
                out["attempts"] = attempts
                out["result"] = result_json(result)
            else:
                raise SystemExit(f"unknown mode {mode}")
    out["elapsed_s"] = time.monotonic() - started
    return out


def main() -> None:
    url, mode, tool, arguments = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    print(json.dumps(asyncio.run(run(url, mode, tool, arguments))), flush=True)


if __name__ == "__main__":
    main()
