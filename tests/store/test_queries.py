"""The named queries: each entry becomes each dialect's placeholders, and nothing else moves."""

from __future__ import annotations

import pytest

from history.store._queries import QUERIES, compile_named, load, parse


def test_a_name_becomes_each_dialects_numbered_placeholder_once() -> None:
    sql = "SELECT * FROM message WHERE thread = :thread AND seq > :after OR thread = :thread"
    sqlite, postgresql = compile_named(sql, "sqlite"), compile_named(sql, "postgresql")
    assert sqlite.text.endswith("thread = ?1 AND seq > ?2 OR thread = ?1")
    assert postgresql.text.endswith("thread = $1 AND seq > $2 OR thread = $1")
    assert sqlite.names == postgresql.names == ("thread", "after")
    assert sqlite.args({"after": 3, "thread": "t", "unused": 0}) == ("t", 3)


def test_literals_quoted_names_comments_and_casts_are_left_alone() -> None:
    sql = (
        "SELECT ':no', 'it''s :no ?', \":no\", x::text, json_extract(v, '$[0]') -- :no ?\n"
        "/* :no */ FROM t WHERE a = :yes AND b = ? AND c = :yes::bigint[]"
    )
    found = compile_named(sql, "postgresql")
    assert found.names == ("yes",)
    assert found.text == sql.replace(":yes", "$1")


def test_a_missing_parameter_is_named() -> None:
    with pytest.raises(TypeError, match="'thread'"):
        compile_named("SELECT :thread", "sqlite").args({})


def test_entries_keep_their_docs_and_a_variant_replaces_only_its_own_text() -> None:
    shared = (
        "-- The file's own comment.\n\n"
        "-- name: one\n-- The first.\n-- Two lines.\nSELECT 1 WHERE a = :a;\n\n"
        "-- name: two\nSELECT 2;\n"
    )
    queries = load(shared, "-- name: two\nSELECT 'two' WHERE b = :b;\n")
    assert parse(shared)["one"] == ("The first. Two lines.", "SELECT 1 WHERE a = :a")
    assert queries["one"].sqlite.text == "SELECT 1 WHERE a = ?1"
    assert queries["one"].postgresql.text == "SELECT 1 WHERE a = $1"
    assert queries["two"].sqlite.text == "SELECT 2"
    assert queries["two"].postgresql.text == "SELECT 'two' WHERE b = $1"


def test_a_variant_of_no_query_and_a_name_used_twice_are_refused() -> None:
    with pytest.raises(ValueError, match="'three'"):
        load("-- name: one\nSELECT 1;\n", "-- name: three\nSELECT 3;\n")
    with pytest.raises(ValueError, match="named twice"):
        parse("-- name: one\nSELECT 1;\n-- name: one\nSELECT 2;\n")


def test_both_dialects_of_every_query_take_the_same_parameters() -> None:
    # Lists differ (SQLite reads JSON, PostgreSQL arrays); the rest must not.
    lists = {
        "keys",
        "levels",
        "indexes",
        "key_agents",
        "key_terms",
        "key_lines",
        "key_levels",
        "key_indexes",
    }
    for query in QUERIES.values():
        sqlite, postgresql = set(query.sqlite.names), set(query.postgresql.names)
        assert sqlite - lists == postgresql - lists, query.name
