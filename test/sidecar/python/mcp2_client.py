"""The Python MCP SDK 2.x (`mcp` from PyPI), unmodified, calling one tool at the Tollgate
sidecar's MCP face. Run by test/sidecar/mcp-clients.test.ts:

    python mcp2_client.py <mcp url> <tool> <arguments as JSON>

`Client(url)` negotiates as the SDK does (mode "auto": server/discover, then the modern era) and
drives `input_required` itself: each round a retry carrying the requestState, until the result.
Prints one JSON object on stdout: the era, the protocol version and the result.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from mcp import Client


async def run(url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async with Client(url) as client:
        result = await client.call_tool(tool, arguments)
        return {
            "protocol_version": getattr(client, "protocol_version", None),
            "result": result.model_dump(mode="json", by_alias=True, exclude_none=True),
        }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))))
