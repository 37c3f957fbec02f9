"""The PostgreSQL fixtures of :mod:`tests.postgres`: a real server, a new database per test."""

from __future__ import annotations

from sqlalchemy import create_engine, inspect, text

from tests.postgres import PostgresServer


def test_the_server_is_a_real_postgresql(postgres_server: PostgresServer) -> None:
    with postgres_server.connect() as conn:
        [version] = conn.execute("SELECT version()").fetchone()
    assert "PostgreSQL" in version, version


def test_each_url_is_a_new_isolated_database(postgres_server: PostgresServer,
                                            postgres_url: str) -> None:
    with postgres_server.database() as other:  # what postgres_url does, a second time
        assert other != postgres_url
        assert other.rsplit("/", 1)[0] == postgres_url.rsplit("/", 1)[0]  # the same server
        first, second = create_engine(postgres_url), create_engine(other)
        try:
            with first.begin() as conn:
                assert inspect(conn).get_table_names() == []  # new and empty
                conn.execute(text("CREATE TABLE t (x int)"))
                conn.execute(text("INSERT INTO t VALUES (1)"))
            with second.connect() as conn:  # pooled: still open when the database is dropped
                assert inspect(conn).get_table_names() == []
                with first.connect() as c1:
                    assert c1.execute(text("SELECT x FROM t")).scalar_one() == 1
        finally:
            first.dispose()
    gone = other.rsplit("/", 1)[1]
    with postgres_server.connect() as conn:
        names = [r[0] for r in conn.execute("SELECT datname FROM pg_database")]
    assert gone not in names and postgres_url.rsplit("/", 1)[1] in names
    second.dispose()
