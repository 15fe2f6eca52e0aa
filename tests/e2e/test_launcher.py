"""The launcher (`python serve_app.py`, `minisphere serve`): what it refuses before it starts
anything, and how it stops."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.support.tcp_relay import free_port


def test_serve_refuses_non_loopback_without_admin_token(tmp_path, monkeypatch, capsys):
    import serve_app

    monkeypatch.setenv("MINISPHERE_HOST", "0.0.0.0")
    monkeypatch.setenv("MINISPHERE_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("MINISPHERE_ADMIN_TOKEN", raising=False)
    assert serve_app.main([]) == 2
    assert "non-loopback" in capsys.readouterr().err


def test_the_launcher_refuses_a_short_admin_token_off_loopback_before_starting_ray(
    tmp_path, monkeypatch, capsys
):
    import serve_app

    monkeypatch.setenv("MINISPHERE_HOST", "0.0.0.0")
    monkeypatch.setenv("MINISPHERE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MINISPHERE_ADMIN_TOKEN", "a-24-character-admin-tok")
    assert serve_app.main([]) == 2
    out, err = capsys.readouterr()
    assert "at least 32 characters" in err and "starting Ray" not in out


def test_a_changed_contract_byte_stops_the_launcher_naming_the_file_and_both_hashes(
    tmp_path, monkeypatch, capsys, contracts_copy
):
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


# under the 30 s Serve's own shutdown waited for its controller (the failure this guards), with
# room for a loaded machine: 3 s on a quiet one, 15 s beside two CPU loops and a test run
STOP_WITHIN_S = 25
START_TIMEOUT_S = 240


def ray_processes_under(folder: str) -> list[int]:
    """Pids of processes whose command line names `folder` (a Ray session's processes name
    their session directory, under RAY_TMPDIR)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if folder.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def launcher_env(data_dir: Path, ray_folder: str, port: int, token: str) -> dict[str, str]:
    env = {
        **os.environ,
        "MINISPHERE_DATA_DIR": str(data_dir),
        "MINISPHERE_HOST": "127.0.0.1",
        "MINISPHERE_PORT": str(port),
        "MINISPHERE_ADMIN_TOKEN": token,
        "MINISPHERE_MAX_REPLICAS": "1",
        # a new local Ray in its own folder, never a cluster already running here
        "RAY_ADDRESS": "local",
        "RAY_TMPDIR": ray_folder,
    }
    env.pop("MINISPHERE_RAY_ADDRESS", None)
    return env


def wait_until_listening(process: subprocess.Popen, output: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while "Mini-Sphere is listening" not in output.read_text(errors="replace"):
        assert process.poll() is None, output.read_text(errors="replace")[-3000:]
        assert time.monotonic() < deadline, "the service did not start"
        time.sleep(0.5)


def write_one_entry(port: int, token: str) -> None:
    admin = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
        created = http.post("/v1/workspaces", headers=admin, json={"id": "before-stop"})
        assert created.status_code == 201, created.text
        written = http.post(
            "/v1/w/before-stop/capture",
            headers=admin,
            json={"content": "written just before Ctrl-C"},
        )
        assert written.status_code == 200, written.text


def stop_with_ctrl_c(process: subprocess.Popen, output: Path, ray_folder: str) -> None:
    process.send_signal(signal.SIGINT)
    pressed = time.monotonic()
    returncode = process.wait(timeout=120)
    took = time.monotonic() - pressed
    said = output.read_text(errors="replace")
    assert returncode == 0, said[-3000:]
    assert took < STOP_WITHIN_S, f"stopping took {took:.1f} s: {said[-3000:]}"
    assert "failed to shut down" not in said, said[-3000:]
    assert "hibernated 1 resident workspace(s)" in said, said[-3000:]
    deadline = time.monotonic() + 10
    while ray_processes_under(ray_folder) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert ray_processes_under(ray_folder) == [], "Ray processes outlived the launcher"


def test_ctrl_c_on_minisphere_serve_stops_in_seconds_and_leaves_no_ray_process(tmp_path):
    """What a new user does: `minisphere serve`, one write, Ctrl-C. The residents hibernate and
    the local Ray stops in seconds, with no "Controller failed to shut down" (Serve's own
    shutdown, which waited 30 s for its controller and stopped nothing Ray's would not), and no
    process of that Ray is left behind."""
    launcher = shutil.which("minisphere")
    if launcher is None:
        pytest.skip("the minisphere command is not installed (pip install -e .)")
    # a short private Ray folder: its processes are found by it, and its socket paths stay
    # under the length Unix sockets allow
    ray_folder = tempfile.mkdtemp(prefix="msr-", dir="/tmp")
    port, token = free_port(), "launcher-test-" + uuid.uuid4().hex
    output = tmp_path / "serve.log"
    with output.open("wb") as log:
        process = subprocess.Popen(
            [launcher, "serve"],
            cwd=Path(__file__).parents[2],
            env=launcher_env(tmp_path / "data", ray_folder, port, token),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until_listening(process, output)
        write_one_entry(port, token)
        stop_with_ctrl_c(process, output, ray_folder)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pid in ray_processes_under(ray_folder):  # only this test's own Ray's processes
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(ray_folder, ignore_errors=True)
