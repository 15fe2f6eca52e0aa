"""`minisphere export` / `minisphere import` offline (on workspace files), progress on stderr."""

from __future__ import annotations

import json

from minisphere.cli.main import main
from minisphere.engine.workspace import Workspace
from tests.transfer.helpers import body_lines, table_dump


def test_transfer_cli_offline_round_trip_and_raw_copy(ws, tmp_path, capsys):
    first = ws.capture("the cli exports this 東京", tags=["cli"])["id"]
    second = ws.capture("and this one links back", kind="episodic")["id"]
    ws.link(second, first, "caused_by")
    ws.append(first, "with a revision")
    out, raw = tmp_path / "out.jsonl", tmp_path / "raw.db"
    assert main(["export", "notes", "--path", str(ws.path), "-o", str(out), "--raw", str(raw)]) == 0
    err = capsys.readouterr().err
    assert "export notes" in err and "copy notes" in err and "4 lines" in err
    data_dir = tmp_path / "data"
    assert main(["import", "copy", str(out), "--data-dir", str(data_dir)]) == 1  # no file yet
    assert "--create" in capsys.readouterr().err
    assert main(["import", "copy", str(out), "--data-dir", str(data_dir), "--create"]) == 0
    report = json.loads(capsys.readouterr().err.strip().splitlines()[-1].split(": ", 1)[1])
    assert report["entries"] == 2 and report["edges"] == 1 and report["complete"]
    target = data_dir / "workspaces" / "copy" / "workspace.db"
    with Workspace(target) as copy, Workspace(raw) as raw_copy:
        assert table_dump(copy) == table_dump(ws) == table_dump(raw_copy)
    again = tmp_path / "again.jsonl"
    assert main(["export", "copy", "--data-dir", str(data_dir), "-o", str(again)]) == 0
    assert body_lines(again.read_text()) == body_lines(out.read_text())
    assert main(["import", "copy", str(out), "--data-dir", str(data_dir)]) == 0
    report = json.loads(capsys.readouterr().err.strip().splitlines()[-1].split(": ", 1)[1])
    assert report["duplicateIds"] == 2 and report["entries"] == 0


def test_transfer_cli_reports_bad_input_clearly(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"record": "entry"}\n', encoding="utf-8")
    assert main(["import", "x", str(bad), "--path", str(tmp_path / "x.db"), "--create"]) == 1
    assert "not a minisphere-jsonl export" in capsys.readouterr().err
    assert main(["export", "x", "--path", str(tmp_path / "missing.db")]) == 1
    assert "no workspace file" in capsys.readouterr().err


def test_transfer_progress_line_renders_bar_and_plain_lines():
    import io

    from minisphere.cli.progress import ProgressLine

    stream = io.StringIO()
    bar = ProgressLine("import ws", stream=stream, interactive=False)
    assert "[###############...............] 50/100 records" not in bar.render(50, 100)
    assert "50/100 lines (50%)" in bar.render(50, 100)
    bar(10, 100)
    bar.finish("done")
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("import ws [###") and lines[-1] == "import ws: done"
    tty = io.StringIO()
    live = ProgressLine("export", unit="records", stream=tty, interactive=True)
    live(3, 0)
    live.finish()
    assert tty.getvalue().startswith("\rexport 3 records") and tty.getvalue().endswith("\n")
