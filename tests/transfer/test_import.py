"""Import: batches, resume after an interruption, duplicate skipping, clear errors on bad
files; the raw SQLite copy."""

from __future__ import annotations

import json

import pytest

from minisphere.engine import db
from minisphere.engine.workspace import Workspace
from minisphere.errors import ImportFormatError, ImportVersionError, TransferError
from minisphere.transfer import CHECKPOINT_PREFIX, export_file, export_raw, import_file
from tests.transfer.helpers import EXPORT_TIME_MS, body_lines, export_text, table_dump

ENTRIES = 23


@pytest.fixture
def source(ws):
    ids = [
        ws.capture(f"fact number {i} about ünïcødé 東京 🚀", tags=[f"t{i % 3}"])["id"]
        for i in range(ENTRIES)
    ]
    for i in range(1, ENTRIES):
        ws.link(ids[i - 1], ids[i], "relates_to")
    ws.update(ids[0], "fact zero, rewritten")
    return ws


@pytest.fixture
def export_path(source, tmp_path):
    path = tmp_path / "export.jsonl"
    with path.open("w", encoding="utf-8") as out:
        export_file(source.path, out, now_ms=EXPORT_TIME_MS)
    return path


def fresh(tmp_path, name="target.db"):
    return Workspace(tmp_path / name, synchronous="OFF")


class Interrupt(Exception):
    pass


def test_transfer_import_resumes_after_interruption(source, export_path, tmp_path):
    seen = []

    def stop_after_two_batches(done, total):
        seen.append(done)
        if len(seen) == 2:
            raise Interrupt()

    with fresh(tmp_path) as target:
        with pytest.raises(Interrupt):
            import_file(target, export_path, batch_lines=5, progress=stop_after_two_batches)
        assert target.get_count() == {"count": 10}  # two committed batches of 5
        marks = target.conn.execute(
            "SELECT value FROM workspace_meta WHERE key LIKE ?", (CHECKPOINT_PREFIX + "%",)
        ).fetchall()
        assert marks == [("10",)]
        progress = []
        report = import_file(
            target, export_path, batch_lines=5, progress=lambda d, t: progress.append((d, t))
        )
        assert report["resumedFrom"] == 10 and report["complete"]
        assert report["entries"] == ENTRIES - 10 and report["duplicateIds"] == 0
        assert progress[-1] == (ENTRIES + ENTRIES - 1, ENTRIES + ENTRIES - 1)
        assert table_dump(target) == table_dump(source)
        assert (
            target.conn.execute(
                "SELECT COUNT(*) FROM workspace_meta WHERE key LIKE ?", (CHECKPOINT_PREFIX + "%",)
            ).fetchone()[0]
            == 0
        )


def test_transfer_import_twice_skips_everything(source, export_path, tmp_path):
    with fresh(tmp_path) as target:
        import_file(target, export_path)
        again = import_file(target, export_path)
        assert again["entries"] == again["edges"] == 0
        assert again["duplicateIds"] == ENTRIES and again["duplicateEdges"] == ENTRIES - 1
        assert table_dump(target) == table_dump(source)


def test_transfer_import_skips_exact_content_duplicates_and_repoints_edges(
    export_path, tmp_path, source
):
    with fresh(tmp_path) as target:
        local = target.capture("FACT number 1 about ünïcødé 東京 🚀")["id"]  # same, normalized
        report = import_file(target, export_path)
        assert report["duplicateContent"] == 1 and report["entries"] == ENTRIES - 1
        neighbours = {item["entry"]["id"] for item in target.connections(local)["items"]}
        assert len(neighbours) == 2  # the edges of the skipped duplicate now point here


def test_transfer_import_refuses_bad_lines_with_line_numbers(export_path, tmp_path):
    lines = export_path.read_text(encoding="utf-8").splitlines()
    broken = json.loads(lines[3])
    broken["status"] = "archived"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:3], json.dumps(broken), *lines[4:]]) + "\n")
    with fresh(tmp_path) as target:
        with pytest.raises(ImportFormatError, match="line 4: status"):
            import_file(target, bad, batch_lines=100)
        assert target.get_count() == {"count": 0}  # the failing batch left nothing
    for text, error, message in [
        ("", ImportFormatError, "empty"),
        ('{"record": "entry"}\n', ImportFormatError, "no header"),
        (
            lines[0].replace('"formatVersion":1', '"formatVersion":9') + "\n",
            ImportVersionError,
            "version 9",
        ),
        (lines[0] + "\nnot json\n", ImportFormatError, "line 2: not valid JSON"),
        # a record type that is no string (a list can be no key) is named, not a TypeError
        (lines[0] + '\n{"record": []}\n', ImportFormatError, "line 2: unknown record type"),
    ]:
        path = tmp_path / "case.jsonl"
        path.write_text(text, encoding="utf-8")
        with fresh(tmp_path, "case.db") as target, pytest.raises(error, match=message):
            import_file(target, path)


def test_transfer_import_reports_truncated_file(export_path, tmp_path):
    lines = export_path.read_text(encoding="utf-8").splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:10]) + "\n", encoding="utf-8")
    with fresh(tmp_path) as target:
        report = import_file(target, cut)
        assert not report["complete"] and report["lines"] == 9
        assert report["expected"] == ENTRIES + ENTRIES - 1


def test_transfer_export_raw_is_a_consistent_openable_copy(source, tmp_path):
    steps = []
    result = export_raw(source.path, tmp_path / "copy.db", progress=lambda d, t: steps.append(d))
    assert result["bytes"] > 0 and steps
    conn = db.sqlite3.connect(str(tmp_path / "copy.db"))
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # self-contained
    conn.close()
    with Workspace(tmp_path / "copy.db", synchronous="OFF") as copy:
        assert export_text(copy).splitlines()[1:] == body_lines(export_text(source))
        assert copy.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with pytest.raises(TransferError):
        export_raw(tmp_path / "missing.db", tmp_path / "x.db")


@pytest.mark.parametrize("field", ["createdAt", "updatedAt", "recallCount", "staleDueAt"])
@pytest.mark.parametrize("value", [2**53 + 1, 2**63, 10**30])
def test_transfer_import_refuses_integers_sqlite_cannot_hold(export_path, tmp_path, field, value):
    """An integer past 2^53 is a clear format error naming the line, not a driver overflow
    (a 500 through the service)."""
    lines = export_path.read_text(encoding="utf-8").splitlines()
    broken = json.loads(lines[2])
    broken[field] = value
    bad = tmp_path / "big.jsonl"
    bad.write_text("\n".join([*lines[:2], json.dumps(broken), *lines[3:]]) + "\n")
    with fresh(tmp_path) as target:
        with pytest.raises(ImportFormatError, match=f"line 3: {field}"):
            import_file(target, bad, batch_lines=100)
        assert target.get_count() == {"count": 0}


def test_transfer_import_refuses_a_chunk_that_leaves_a_gap(export_path, tmp_path):
    from minisphere.errors import ImportGap
    from minisphere.transfer import ImportSession
    from minisphere.transfer.format import parse_record

    lines = export_path.read_text(encoding="utf-8").splitlines()

    def chunk(first, last):
        return [parse_record(lines[n], n + 1) for n in range(first, last + 1)]

    with fresh(tmp_path) as target:
        session = ImportSession(target, lines[0], "gap")
        session.feed(chunk(1, 10), 1)
        with pytest.raises(ImportGap, match="line 11"):
            session.feed(chunk(21, 30), 21)  # lines 11-20 were never sent
        assert target.get_count() == {"count": 10} and session.applied == 10
        session.feed(chunk(11, len(lines) - 1), 11)
        report = session.finish(len(lines) - 1)
        assert report["complete"] and target.get_count() == {"count": ENTRIES}
