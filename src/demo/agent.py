"""The demo's scripted agent in Python, a process of its own.

    python src/demo/agent.py --sidecar 127.0.0.1:50051 --workspace /path/to/folder

The same script as src/demo/agent.ts, as a grpcio client of the sidecar's
``tollgate.v1.ToolGateway``: the message classes and the stub are generated at run time from
proto/tollgate/v1/gateway.proto (``grpc.protos_and_services``, grpcio-tools), so no generated
code is kept in the repository. It opens a chain, makes the script's calls, completes the chain
and fetches the signed receipt, reporting each step as one JSON line on stdout (the format is in
src/demo/protocol.ts); diagnostics go to stderr.

Exit codes: 0 when the script ran to its end, 1 when a call failed outside the script's reports
(the sidecar unreachable, say), 2 for usage errors or a missing grpcio/grpcio-tools.

Python 3.10+ with grpcio and grpcio-tools (``pip install "./python[demo]"``; the virtualenv of
``scripts/python-env.sh`` has them).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

AGENT_NAME = "research-agent"
PROTO_ROOT = Path(__file__).resolve().parents[2] / "proto"


def report(line: dict[str, Any]) -> None:
    """Writes one report line (protocol.ts) to stdout."""
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def load_gateway(proto_root: Path) -> tuple[ModuleType, ModuleType, ModuleType]:
    """Generates the gateway's messages and stub from the .proto files; returns grpc, pb2, pb2_grpc."""
    try:
        import grpc
        import grpc_tools  # noqa: F401  (protos_and_services needs it)
    except ImportError as err:
        sys.stderr.write(
            f"agent.py: {err.name} is missing: the Python agent needs grpcio and grpcio-tools "
            '(pip install "./python[demo]", or use the python of scripts/python-env.sh)\n'
        )
        sys.exit(2)
    if not (proto_root / "tollgate/v1/gateway.proto").is_file():
        sys.stderr.write(f"agent.py: no tollgate/v1/gateway.proto under {proto_root}\n")
        sys.exit(2)
    # the .proto import path is sys.path; appended so that proto/google never shadows a package
    sys.path.append(str(proto_root))
    pb2, pb2_grpc = grpc.protos_and_services("tollgate/v1/gateway.proto")
    return grpc, pb2, pb2_grpc


class Gateway:
    """A ToolGateway client: JSON in, JSON out; a gRPC error is reported as a refusal."""

    def __init__(self, address: str, proto_root: Path) -> None:
        self.grpc, self.pb2, pb2_grpc = load_gateway(proto_root)
        from google.protobuf import json_format, struct_pb2

        self._json_format = json_format
        self._struct_pb2 = struct_pb2
        self.channel = self.grpc.insecure_channel(address)
        self.stub = pb2_grpc.ToolGatewayStub(self.channel)

    def struct(self, obj: dict[str, Any]) -> Any:
        """A JSON object as google.protobuf.Struct."""
        s = self._struct_pb2.Struct()
        s.update(obj)
        return s

    def to_json(self, message: Any) -> dict[str, Any]:
        """A message as JSON with the proto's field names (proto3 defaults included)."""
        out: dict[str, Any] = self._json_format.MessageToDict(
            message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
        return out

    def decision_of(self, err: Any) -> dict[str, Any] | None:
        """The Decision of a refused call (`tollgate-decision-bin` trailer), None when absent."""
        for key, value in err.trailing_metadata() or ():
            if key == "tollgate-decision-bin":
                return self.to_json(self.pb2.Decision.FromString(value))
        return None

    def close(self) -> None:
        """Closes the channel."""
        self.channel.close()


def run(gateway: Gateway, workspace: Path) -> None:
    """The script: the same calls, in the same order, as agent.ts."""
    pb2 = gateway.pb2
    opened = gateway.stub.OpenChain(
        pb2.OpenChainRequest(name="demo-research-run", metadata=gateway.struct({"ticket": "DEMO-1"}))
    )
    chain_id = opened.chain_id
    grpc_version = getattr(gateway.grpc, "__version__", "?")
    report(
        {
            "type": "chain",
            "chain_id": chain_id,
            "agent": f"Python ({platform.python_version()}, grpcio {grpc_version})",
        }
    )

    def invoke(call_id: str, upstream: str, action: str, payload: dict[str, Any]) -> None:
        """One Invoke, reported as invoked or refused."""
        request = pb2.InvokeRequest(
            chain_id=chain_id,
            agent_name=AGENT_NAME,
            action_name=action,
            upstream=upstream,
            payload=gateway.struct(payload),
        )
        head = {"id": call_id, "action": action, "upstream": upstream}
        try:
            r = gateway.stub.Invoke(request)
        except gateway.grpc.RpcError as err:
            report(
                {
                    "type": "refused",
                    **head,
                    "code": err.code().value[0],
                    "details": err.details() or "",
                    "decision": gateway.decision_of(err),
                }
            )
            return
        report(
            {
                "type": "invoked",
                **head,
                "decision": gateway.to_json(r.decision),
                "forwarded": r.forwarded,
                "result": json.loads(r.result_json) if r.result_json else None,
                "upstream_error": r.upstream_error,
            }
        )

    # 1. reads and a memory write
    invoke("list", "files", "list_directory", {"path": str(workspace)})
    invoke("read", "files", "read_text_file", {"path": str(workspace / "notes.md")})
    entities = [
        {
            "name": f"lead-{i:02d}",
            "entityType": "lead",
            "observations": [f"found in research run DEMO-1 (#{i})"],
        }
        for i in range(1, 21)
    ]
    invoke("create", "memory", "create_entities", {"entities": entities})
    invoke("graph", "memory", "read_graph", {})
    # 2., 3. decided and recorded only (no upstream); each waits for approval in the sidecar
    invoke(
        "mail",
        "",
        "send_email",
        {
            "to": "partner@globex.example",
            "subject": "Q3 research summary",
            "body": "Revenue grew 12% quarter over quarter.",
        },
    )
    invoke("payment", "", "pay_invoice", {"invoice": "INV-7", "amount_usd": 7500, "payee": "Globex Corp"})
    # 4. the memory server's delete_entities carries no count: the agent states it
    names = [e["name"] for e in entities]
    invoke("delete", "memory", "delete_entities", {"entityNames": names, "count": len(names)})
    invoke("after", "memory", "read_graph", {})
    # 5. complete the chain, fetch the signed receipt
    done = gateway.stub.CompleteChain(pb2.CompleteChainRequest(chain_id=chain_id))
    report({"type": "completed", **gateway.to_json(done)})
    receipt = gateway.stub.GetReceipt(pb2.GetReceiptRequest(chain_id=chain_id)).receipt
    report({"type": "receipt", "receipt": gateway._json_format.MessageToDict(receipt)})


def main(argv: list[str]) -> int:
    """Parses the command line, runs the script; returns the exit code."""
    parser = argparse.ArgumentParser(prog="agent.py", description="The Tollgate demo's scripted agent (Python).")
    parser.add_argument("--sidecar", required=True, help="the sidecar's gRPC address, HOST:PORT")
    parser.add_argument("--workspace", required=True, type=Path, help="the folder the filesystem server serves")
    parser.add_argument("--proto", type=Path, default=PROTO_ROOT, help="directory holding tollgate/v1/*.proto")
    args = parser.parse_args(argv)
    gateway = Gateway(args.sidecar, args.proto)
    try:
        run(gateway, args.workspace)
    except gateway.grpc.RpcError as err:
        sys.stderr.write(f"agent.py: {err.code().name}: {err.details()}\n")
        return 1
    finally:
        gateway.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
