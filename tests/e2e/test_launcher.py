"""The launcher (`python serve_app.py`, `minisphere serve`) before it starts anything."""


def test_serve_refuses_non_loopback_without_admin_token(tmp_path, monkeypatch, capsys):
    import serve_app
    monkeypatch.setenv("MINISPHERE_HOST", "0.0.0.0")
    monkeypatch.setenv("MINISPHERE_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("MINISPHERE_ADMIN_TOKEN", raising=False)
    assert serve_app.main([]) == 2
    assert "non-loopback" in capsys.readouterr().err
