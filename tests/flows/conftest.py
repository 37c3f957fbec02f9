import pytest


@pytest.fixture(scope="session", autouse=True)
def prefect_harness():
    """One ephemeral Prefect backend for the whole session (each start costs seconds)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield
