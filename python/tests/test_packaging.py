"""The package as users get it: ``python -m build`` makes an sdist and a wheel (the wheel built
from the sdist), a fresh virtualenv installs the wheel and imports ``sdk``, and the installed
package governs an action against the real service. Plus the type check (mypy --strict)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import zipfile
from pathlib import Path

from .support import Env

PROJECT = Path(__file__).resolve().parents[1]


def run(*argv: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    proc = subprocess.run(
        list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"{' '.join(argv)} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_the_built_wheel_installs_into_a_fresh_virtualenv_and_works(env: Env) -> None:
    with tempfile.TemporaryDirectory(prefix="tg-wheel-") as tmp:
        out = Path(tmp) / "dist"
        run(sys.executable, "-m", "build", "--outdir", str(out), str(PROJECT))
        wheels = list(out.glob("tollgate_sdk-*.whl"))
        sdists = list(out.glob("tollgate_sdk-*.tar.gz"))
        assert len(wheels) == 1 and len(sdists) == 1, list(out.iterdir())
        names = zipfile.ZipFile(wheels[0]).namelist()
        for module in ("__init__", "chain", "client", "config", "exceptions", "sanitize", "langgraph", "langchain", "crewai", "mcp"):
            assert f"sdk/{module}.py" in names
        assert "sdk/py.typed" in names
        assert not any(n.startswith("tests/") for n in names)

        venv = Path(tmp) / "venv"
        base = getattr(sys, "_base_executable", sys.executable)
        run(base, "-m", "venv", str(venv))
        py = str(venv / "bin" / "python")
        clean_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        run(py, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "-q", str(wheels[0]), env=clean_env)
        script = textwrap.dedent(
            """
            import sys, sdk, sdk.client, sdk.exceptions, sdk.mcp
            assert sdk.__file__.startswith(sys.prefix), sdk.__file__
            sdk.init(sys.argv[1], backend_url=sys.argv[2])
            with sdk.Chain("installed-wheel", metadata={"from": "wheel"}) as chain:
                d = chain.record_agent_action_sync("reader", "tool_call", "read_file", {"password": "x"})
                assert d.policy_decision == "allow", d
            print(sdk.__version__, chain.result.receipt_number)
            """
        )
        printed = run(py, "-c", script, env.org.client_key, env.url, cwd=Path(tmp), env=clean_env)
        version, receipt_number = printed.split()
        assert version == "0.1.0"
        assert receipt_number.startswith("PR-")
        # The frameworks are optional extras: the core install does not pull them in.
        missing = subprocess.run([py, "-c", "import sdk.langgraph"], capture_output=True, text=True, cwd=tmp, env=clean_env)
        assert missing.returncode != 0
        assert "pip install 'tollgate-sdk[langgraph]'" in missing.stderr


def test_the_package_type_checks_with_mypy_strict() -> None:
    printed = run(sys.executable, "-m", "mypy", "--strict", cwd=PROJECT)
    assert "Success: no issues found" in printed
