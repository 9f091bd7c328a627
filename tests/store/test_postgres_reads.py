"""The read commands on PostgreSQL only read, as on SQLite: a role that may only SELECT runs
them, and a schema without a store is refused, not given tables."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from history.cli import main

from ..stores import postgres_schema, postgres_sql

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "launch.jsonl"


@pytest.fixture
def url() -> Iterator[str]:
    with postgres_schema() as fresh:
        yield fresh


def as_role(url: str, role: str) -> str:
    """`url` with another user (the test server trusts local roles)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{role}@{host}"))


def tables(url: str) -> int:
    found = postgres_sql(
        url, "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
    )
    return int(found[0][0])


def test_a_role_that_may_only_select_runs_the_read_commands(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ingest", str(EXAMPLE), "--tail", "40,80", "--db", url]) == 0
    schema = url.rpartition("search_path=")[2]
    role = f"reader_{uuid.uuid4().hex[:10]}"
    postgres_sql(
        url,
        f"CREATE ROLE {role} LOGIN",
        f"GRANT USAGE ON SCHEMA {schema} TO {role}",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}",
    )
    reader = as_role(url, role)
    try:
        capsys.readouterr()
        for argv in (
            ["threads"],
            ["show", "t"],
            ["search", "t", "price"],
            ["prompt", "t"],
            ["zoom", "t", "0+1"],
        ):
            assert main([*argv, "--db", reader, "--json"]) == 0, argv
            out, err = capsys.readouterr()
            assert "permission denied" not in err and json.loads(out), argv
    finally:
        postgres_sql(url, f"DROP OWNED BY {role}", f"DROP ROLE {role}")


def test_a_schema_without_a_store_is_refused_and_left_empty(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (["threads"], ["show", "t"], ["prompt", "t"], ["search", "t", "x"]):
        assert main([*argv, "--db", url]) == 2, argv
        assert "no chat-outline store at" in capsys.readouterr().err
    assert tables(url) == 0
