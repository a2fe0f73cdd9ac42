"""The README's Python quick start runs as written against the real service (a reviewer approves
the gated payment from another thread, as a person would in the dashboard)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

from .support import Env

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_quick_start_runs_as_written(env: Env) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    quick_start = blocks[0]
    assert "sdk.init(" in quick_start and "with sdk.Chain(" in quick_start
    stop = threading.Event()

    def reviewer() -> None:
        while not stop.is_set():
            r = env.admin.call("GET", "/v1/approvals?status=pending", env.org.admin_key)
            for approval in r.json().get("approvals", []):
                env.admin.decide(env.org, approval["approval_id"], "approve", notes="invoice checked")
            stop.wait(0.2)

    thread = threading.Thread(target=reviewer, daemon=True)
    thread.start()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", quick_start],
            env={**os.environ, "TOLLGATE_API_KEY": env.org.client_key, "TOLLGATE_URL": env.url},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        stop.set()
        thread.join(5)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "allow backend_evaluation"
    assert lines[1] == "allow human_approval"
    assert re.match(r"^PR-\d{4}-\d{5} hmac-sha256:$", lines[2])
