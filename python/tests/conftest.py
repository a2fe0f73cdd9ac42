"""Fixtures: one real governance service per pytest session; an organization per test module."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from sdk._testing import reset_config

from .support import Admin, Env, Proxy, ServiceProcess


@pytest.fixture(scope="session")
def service() -> Iterator[ServiceProcess]:
    proc = ServiceProcess()
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


@pytest.fixture(scope="session")
def admin(service: ServiceProcess) -> Iterator[Admin]:
    a = Admin(service)
    yield a
    a.close()


@pytest.fixture(scope="module")
def env(request: pytest.FixtureRequest, service: ServiceProcess, admin: Admin) -> Env:
    name = re.sub(r"[^a-z0-9]+", "-", request.module.__name__.rsplit(".", 1)[-1].lower()).strip("-")[:20]
    return Env(service, admin, admin.org(name))


@pytest.fixture
def proxy(service: ServiceProcess) -> Iterator[Proxy]:
    p = Proxy(service.url)
    yield p
    p.close()


@pytest.fixture(autouse=True)
def _forget_init() -> Iterator[None]:
    yield
    reset_config()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A test that needs a part fails when the part is missing: no test of this suite may skip."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped, which this suite does not allow: {report.longrepr}"
