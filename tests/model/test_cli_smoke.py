"""The model tests' fixtures find a working qdq binary."""


def test_version(run_qdq):
    assert run_qdq("--version").stdout.strip().count(".") == 2
