"""What a workspace folder holds beside its live file, as the hosting layer reads it."""


def test_staged_bytes_count_what_restores_stage_and_nothing_else(tmp_path):
    """What the directory reads to let a long restore outlast the bind timeout: a count that
    took in the live file would grow with every write and keep a stalled restore alive."""
    from minisphere.hosting.copies import staged_bytes

    (tmp_path / "workspace.db").write_bytes(b"x" * 5000)  # the live file: not staged
    staging = tmp_path / ".restore-abc"
    staging.mkdir()
    (staging / "snapshot.db").write_bytes(b"s" * 300)
    (tmp_path / "workspace.db.from-replica").write_bytes(b"r" * 70)
    assert staged_bytes(tmp_path) == 370
    (staging / "snapshot.db").write_bytes(b"s" * 900)  # the download goes on
    assert staged_bytes(tmp_path) == 970
