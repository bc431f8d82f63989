"""The SQLite-to-PostgreSQL spelling rewrite (tms.db.translate): each rule, and what it must not touch."""

from __future__ import annotations

import pytest

from tms.db.translate import to_postgres


@pytest.mark.parametrize(
    ("sqlite", "postgres"),
    [
        ("SELECT a FROM t WHERE b = ? AND c = ?", "SELECT a FROM t WHERE b = $1 AND c = $2"),
        ("INSERT INTO t VALUES (?1, ?2, ?1)", "INSERT INTO t VALUES ($1, $2, $1)"),
        ("INSERT OR IGNORE INTO t (a) VALUES (?)", "INSERT INTO t (a) VALUES ($1) ON CONFLICT DO NOTHING"),
        ("INSERT OR IGNORE INTO t (a) VALUES (?) RETURNING a",
         "INSERT INTO t (a) VALUES ($1) ON CONFLICT DO NOTHING RETURNING a"),
        ("SELECT a FROM r AS p CROSS JOIN t AS n ON n.r = p.id CROSS JOIN u",
         "SELECT a FROM r AS p JOIN t AS n ON n.r = p.id CROSS JOIN u"),
        ("SELECT group_concat(p.pos || 'F'), group_concat(x, ' ') FROM t",
         "SELECT string_agg(CAST(p.pos || 'F' AS text), ','), string_agg(CAST(x AS text), ' ') FROM t"),
        ("SELECT id FROM t WHERE +tenant_id = ? AND +r.tenant_id = ? AND a + 1 > 2",
         "SELECT id FROM t WHERE tenant_id = $1 AND r.tenant_id = $2 AND a + 1 > 2"),
        ("SELECT 1 FROM t WHERE env IS ? AND x IS NOT ? AND y IS NULL",
         "SELECT 1 FROM t WHERE env IS NOT DISTINCT FROM $1 AND x IS DISTINCT FROM $2 AND y IS NULL"),
        ("SELECT a FROM t ORDER BY t.title COLLATE NOCASE", "SELECT a FROM t ORDER BY lower(t.title)"),
        ("SELECT IFNULL(a, 0), json_array(a, b) FROM t WHERE n LIKE ?",
         "SELECT COALESCE(a, 0), json_build_array(a, b) FROM t WHERE n ILIKE $1"),
        ("SELECT CAST(a AS REAL) FROM t LIMIT -1", "SELECT CAST(a AS double precision) FROM t LIMIT ALL"),
    ],
)
def test_each_rule(sqlite: str, postgres: str) -> None:
    assert to_postgres(sqlite) == (postgres, None)


def test_named_parameters_keep_one_number_per_name() -> None:
    text, names = to_postgres("SELECT 1 FROM t WHERE a = :tenant AND b = :run OR c = :tenant")
    assert text == "SELECT 1 FROM t WHERE a = $1 AND b = $2 OR c = $1"
    assert names == ("tenant", "run")


def test_string_literals_quoted_names_and_casts_are_left_alone() -> None:
    text, names = to_postgres(
        "SELECT 'a ? b :c LIKE d', \"x?\" FROM t WHERE v::json IS NOT NULL AND w = 'it''s ?' AND z = ?"
    )
    assert text == (
        "SELECT 'a ? b :c LIKE d', \"x?\" FROM t WHERE v::json IS NOT NULL AND w = 'it''s ?' AND z = $1"
    )
    assert names is None


def test_mixing_positional_and_named_parameters_is_refused() -> None:
    with pytest.raises(ValueError, match="mixes"):
        to_postgres("SELECT 1 FROM t WHERE a = ? AND b = :b")


def test_subqueries_in_from_get_an_alias_unless_they_have_one() -> None:
    text, _ = to_postgres(
        "SELECT * FROM (SELECT a FROM t LIMIT ?) UNION ALL SELECT * FROM (SELECT ')' FROM u) AS named "
        "UNION ALL SELECT x FROM (SELECT x FROM v) ORDER BY 1"
    )
    assert text == (
        "SELECT * FROM (SELECT a FROM t LIMIT $1) AS _q2 UNION ALL SELECT * FROM (SELECT ')' FROM u) AS named "
        "UNION ALL SELECT x FROM (SELECT x FROM v) AS _q1 ORDER BY 1"
    )


def test_json_paths_and_two_argument_min_max() -> None:
    text, _ = to_postgres("SELECT json_extract(t.value, '$.key'), MIN(a, b), MAX(c), MIN(d) FROM t")
    assert text == "SELECT (CAST(t.value AS json) ->> 'key'), LEAST(a, b), MAX(c), MIN(d) FROM t"
