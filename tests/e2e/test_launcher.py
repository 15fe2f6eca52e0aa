"""The launcher (`python serve_app.py`, `minisphere serve`) before it starts anything."""


def test_serve_refuses_non_loopback_without_admin_token(tmp_path, monkeypatch, capsys):
    import serve_app
    monkeypatch.setenv("MINISPHERE_HOST", "0.0.0.0")
    monkeypatch.setenv("MINISPHERE_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("MINISPHERE_ADMIN_TOKEN", raising=False)
    assert serve_app.main([]) == 2
    assert "non-loopback" in capsys.readouterr().err


def test_the_launcher_refuses_a_short_admin_token_off_loopback_before_starting_ray(
        tmp_path, monkeypatch, capsys):
    import serve_app
    monkeypatch.setenv("MINISPHERE_HOST", "0.0.0.0")
    monkeypatch.setenv("MINISPHERE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MINISPHERE_ADMIN_TOKEN", "a-24-character-admin-tok")
    assert serve_app.main([]) == 2
    out, err = capsys.readouterr()
    assert "at least 32 characters" in err and "starting Ray" not in out


def test_a_changed_contract_byte_stops_the_launcher_naming_the_file_and_both_hashes(
        tmp_path, monkeypatch, capsys, contracts_copy):
    """Checked before Ray starts: a replica that refuses the pins would say so only in Ray's
    controller log, behind Serve's generic "deploying ... failed"."""
    import serve_app
    contract = contracts_copy / "MINI_SPHERE_CONTRACT@0.1.md"
    pinned = (contracts_copy / "MINI_SPHERE_CONTRACT@0.1.md.sha256").read_text().split()[0]
    with contract.open("ab") as text:
        text.write(b"x")
    monkeypatch.setenv("MINISPHERE_DATA_DIR", str(tmp_path))
    assert serve_app.main([]) == 2
    out, err = capsys.readouterr()
    assert "MINI_SPHERE_CONTRACT@0.1.md" in err and pinned in err
    assert "starting Ray" not in out
