"""The one-step file replacement the seal, the snapshot store and the contract pins write
through: a reader sees the old file or the new one, never a part, and nothing is left behind."""

from __future__ import annotations

import os
import stat

import pytest

from minisphere.files import replaced_in_one_step, write_in_one_step


def test_a_write_cut_short_leaves_the_old_file_whole_and_no_temporary_file(tmp_path):
    target = tmp_path / "pin.sha256"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), replaced_in_one_step(target) as out:
        out.write(b"new, but only half")
        raise RuntimeError("killed mid-write")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pin.sha256"]


def test_a_finished_write_replaces_the_file_with_the_mode_asked_for(tmp_path):
    target = tmp_path / "snapshot"
    target.write_bytes(b"old")
    target.chmod(0o644)
    # a temporary file left by an earlier crash, readable by everyone, must not lend its mode
    leftover = tmp_path / f".snapshot.{os.getpid()}.tmp"
    leftover.write_bytes(b"x")
    leftover.chmod(0o644)
    write_in_one_step(target, b"new", mode=0o600)
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snapshot"]
