"""The service under test runs on the database the run names: ``TOLLGATE_TEST_DATABASE``
(scripts/test.mjs runs this suite twice, on embedded PGlite and on a throwaway PostgreSQL
cluster). On PostgreSQL the organization this module created through the API is a row of that
cluster, so a run that silently fell back to PGlite fails here."""

from __future__ import annotations

import os

from .support import Env


def test_the_service_stores_in_the_named_database(env: Env) -> None:
    database = os.environ.get("TOLLGATE_TEST_DATABASE", "pglite")
    assert database in ("pglite", "postgres")
    postgres = env.service.postgres
    if database == "pglite":
        assert postgres is None
        return
    assert postgres is not None
    slug = env.org.slug.replace("'", "''")
    assert postgres.query(f"SELECT count(*) FROM organizations WHERE slug = '{slug}'") == "1"
