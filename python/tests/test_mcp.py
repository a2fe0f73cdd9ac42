"""McpAdapter with the real `mcp` package: a FastMCP server whose tools are wrapped with
adapter.tool() and a ClientSession connected in memory; and a governed client in front of the real
@modelcontextprotocol/server-memory server (Node, from the repo's node_modules) over stdio."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.server.fastmcp import Context, FastMCP
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.types import CallToolResult, TextContent

from sdk import ActionDeniedError, Chain
from sdk.mcp import McpAdapter

from .support import REPO_ROOT, Env, Ticker


def text(result: CallToolResult) -> str:
    part = result.content[0]
    assert isinstance(part, TextContent)
    return part.text


async def test_fastmcp_tools_are_recorded_and_denied_calls_never_run(env: Env) -> None:
    ticker = Ticker()
    chain = Chain("mcp-server", policy_config={"financial_approval_threshold_usd": 500}, config=env.config(ticker))
    chain.add_financial_threshold(1000, None, deny=True)
    await chain.aenter()
    assert chain.chain_id is not None
    adapter = McpAdapter(chain, parent_agent_name="planner")
    with pytest.raises(RuntimeError):
        adapter.install(object())

    paid: list[float] = []
    server = FastMCP("billing")

    @server.tool()
    @adapter.tool("read_report")
    async def read_report(path: str) -> str:
        """Reads a report."""
        return f"report {path}"

    @server.tool()
    @adapter.tool("pay_invoice")
    def pay_invoice(amount_usd: float, ctx: Context) -> str:  # type: ignore[type-arg]
        """Pays an invoice."""
        paid.append(amount_usd)
        return f"paid {amount_usd}"

    listed = await server.list_tools()
    schema = next(t for t in listed if t.name == "pay_invoice").inputSchema
    assert list(schema["properties"]) == ["amount_usd"]

    async with create_connected_server_and_client_session(server) as client:
        read = await client.call_tool("read_report", {"path": "/q3"})
        assert not read.isError
        assert text(read) == "report /q3"

        denied = await client.call_tool("pay_invoice", {"amount_usd": 5000})
        assert denied.isError
        assert "Action denied by policy (financial_deny_threshold)" in text(denied)
        assert paid == []

        # require_approval: the tool call blocks until a reviewer approves, then runs.
        def on_tick(n: int) -> None:
            if n == 1:
                assert chain.chain_id is not None
                env.admin.decide(env.org, env.admin.pending_approval_id(env.org, chain.chain_id), "approve")

        ticker.on_tick = on_tick
        approved = await client.call_tool("pay_invoice", {"amount_usd": 700})
        assert text(approved) == "paid 700.0"
        assert paid == [700]
        assert adapter.last_decision is not None
        assert adapter.last_decision.decision_source == "human_approval"

    stored = env.stored(chain.chain_id)
    assert [(e.agent_name, e.parent_agent_name, e.action_type, e.action_name, e.payload) for e in stored.events] == [
        ("mcp-agent", "planner", "tool_call", "read_report", {"path": "/q3"}),
        ("mcp-agent", "planner", "tool_call", "pay_invoice", {"amount_usd": 5000}),
        ("mcp-agent", "planner", "tool_call", "pay_invoice", {"amount_usd": 700}),
    ]
    assert [e.decision.policy_decision for e in stored.events] == ["allow", "deny", "allow"]
    await chain.aexit()


def test_the_adapter_requires_an_entered_chain(env: Env) -> None:
    with pytest.raises(ValueError, match="entered"):
        McpAdapter(Chain("not-entered", config=env.config()))


def test_handle_tool_call_sync_runs_the_handler_only_when_allowed(env: Env) -> None:
    with Chain(
        "mcp-sync",
        policy_config={"custom_rules": [{"name": "no-drop", "match": {"action_name": "drop_*"}, "outcome": "deny"}]},
        config=env.config(),
    ) as chain:
        adapter = McpAdapter(chain, agent_name="db-agent")
        calls: list[object] = []
        assert adapter.handle_tool_call_sync("select_rows", {"table": "t"}, lambda a: calls.append(a) or "ok") == "ok"
        with pytest.raises(ActionDeniedError):
            adapter.handle_tool_call_sync("drop_table", {"table": "t"}, calls.append)
        assert calls == [{"table": "t"}]


async def test_a_governed_client_in_front_of_the_real_memory_server_over_stdio(env: Env) -> None:
    node = shutil.which("node")
    assert node is not None, "node is required for @modelcontextprotocol/server-memory"
    entry = REPO_ROOT / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
    assert entry.exists(), f"{entry} is missing: run npm install"
    workdir = Path(tempfile.mkdtemp(prefix="tg-mcp-memory-"))
    params = StdioServerParameters(
        command=node, args=[str(entry)], env={"MEMORY_FILE_PATH": str(workdir / "memory.jsonl"), "PATH": "/usr/bin:/bin"}
    )
    chain = Chain(
        "mcp-memory",
        policy_config={
            "custom_rules": [
                {
                    "name": "no-forgetting",
                    "match": {"action_name": "delete_*"},
                    "outcome": "deny",
                    "reason": "Deleting memories is not allowed",
                }
            ]
        },
        config=env.config(),
    )
    try:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session, chain:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"create_entities", "delete_entities", "read_graph"} <= names
            adapter = McpAdapter(chain, agent_name="memory-agent")

            async def graph() -> list[dict[str, object]]:
                res = await session.call_tool("read_graph", {})
                data = res.structuredContent or json.loads(text(res))
                entities: list[dict[str, object]] = data["entities"]
                return entities

            secret = "sk_live_0123456789abcdef"
            args = {"entities": [{"name": "Acme", "entityType": "customer", "observations": ["prefers email", secret]}]}
            created = await adapter.handle_tool_call(
                "create_entities", args, lambda a: session.call_tool("create_entities", a)
            )
            assert not created.isError
            entities = await graph()
            assert [e["name"] for e in entities] == ["Acme"]
            assert entities[0]["observations"] == ["prefers email", secret]

            with pytest.raises(ActionDeniedError) as info:
                await adapter.handle_tool_call(
                    "delete_entities", {"entityNames": ["Acme"]}, lambda a: session.call_tool("delete_entities", a)
                )
            assert info.value.policy_name == "no-forgetting"
            assert info.value.condition == "Deleting memories is not allowed"
            assert [e["name"] for e in await graph()] == ["Acme"]

            assert chain.chain_id is not None
            stored = env.stored(chain.chain_id)
            assert [(e.agent_name, e.action_name, e.decision.policy_decision) for e in stored.events] == [
                ("memory-agent", "create_entities", "allow"),
                ("memory-agent", "delete_entities", "deny"),
            ]
            # The governance record is sanitized; the tool received the original arguments.
            assert secret not in json.dumps(stored.events[0].payload)
            assert "[REDACTED]" in json.dumps(stored.events[0].payload)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    assert chain.result is not None and chain.result.status == "completed"
