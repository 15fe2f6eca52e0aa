"""The settings object: loaded once from the environment, refusals before anything is created,
durability defaults, and the documentation's table of variables (docs/operate/settings.md) kept
equal to `settings.ENV_VARS`."""

import re
from pathlib import Path

import pytest

from minisphere.durability.stores import LocalDirSnapshotStore, S3SnapshotStore, open_snapshot_store
from minisphere.errors import ConfigError
from minisphere.settings import (
    CLIENT_ENV_VARS,
    ENV_VARS,
    deploy_overrides,
    env_table_markdown,
    env_value,
    load_settings,
)


def settings_from(tmp_path, env):
    return load_settings(
        {"MINISPHERE_DATA_DIR": str(tmp_path), "MINISPHERE_ADMIN_TOKEN": "x" * 20, **env}
    )


def test_defaults_are_a_local_store_under_the_data_folder(tmp_path):
    settings = settings_from(tmp_path, {})
    snapshots = settings.snapshots
    assert snapshots.store == "local" and snapshots.local_dir == str(tmp_path / "snapshots")
    assert isinstance(open_snapshot_store(snapshots), LocalDirSnapshotStore)
    assert snapshots.every_writes == 1000 and settings.residency.hibernate_idle_s == 10
    assert settings_from(tmp_path, {}) == settings  # loaded again: the same object


def test_s3_settings(tmp_path):
    settings = settings_from(
        tmp_path,
        {
            "MINISPHERE_SNAPSHOT_STORE": "s3",
            "MINISPHERE_S3_BUCKET": "b",
            "MINISPHERE_S3_PREFIX": "/team/ms/",
            "MINISPHERE_S3_ENDPOINT_URL": "http://127.0.0.1:9",
            "MINISPHERE_S3_REGION": "us-east-1",
            "MINISPHERE_MAX_RESIDENT": "8",
            "MINISPHERE_SNAPSHOT_EVERY_S": "2.5",
        },
    )
    snapshots = settings.snapshots
    assert snapshots.s3.prefix == "team/ms/" and settings.residency.max_resident == 8
    assert snapshots.every_s == 2.5
    store = open_snapshot_store(snapshots)
    assert isinstance(store, S3SnapshotStore) and store.prefix == "team/ms/"
    assert snapshots.describe() == "s3://b/team/ms/ at http://127.0.0.1:9"


@pytest.mark.parametrize(
    "env, words",
    [
        ({"MINISPHERE_SNAPSHOT_STORE": "s3"}, "needs MINISPHERE_S3_BUCKET"),
        ({"MINISPHERE_SNAPSHOT_STORE": "ftp"}, "local or s3"),
        ({"MINISPHERE_MAX_RESIDENT": "0"}, "between"),
        ({"MINISPHERE_SNAPSHOT_EVERY_WRITES": "many"}, "must be a number"),
        ({"MINISPHERE_WORKSPACE_SLOTS": "always"}, "auto, on or off"),
        ({"MINISPHERE_NODE_WORKSPACE_SLOTS": "0"}, "between"),
        ({"MINISPHERE_TRUSTED_PROXIES": "the-load-balancer"}, "not an address or network"),
    ],
)
def test_bad_settings_refuse_to_start(tmp_path, env, words):
    with pytest.raises(ConfigError, match=words):
        load_settings(
            {"MINISPHERE_DATA_DIR": str(tmp_path / "d"), "MINISPHERE_ADMIN_TOKEN": "x" * 20, **env}
        )
    assert not (tmp_path / "d").exists()  # nothing created for a refused config


def test_config(tmp_path):
    with pytest.raises(ConfigError, match="non-loopback"):
        load_settings({"MINISPHERE_DATA_DIR": str(tmp_path), "MINISPHERE_HOST": "0.0.0.0"})
    with pytest.raises(ConfigError):
        load_settings({"MINISPHERE_DATA_DIR": str(tmp_path), "MINISPHERE_PORT": "http"})
    first = load_settings({"MINISPHERE_DATA_DIR": str(tmp_path)})
    again = load_settings({"MINISPHERE_DATA_DIR": str(tmp_path)})
    assert first.admin_token_source == "generated" and again.admin_token_source == "file"
    assert first.admin_token == again.admin_token
    assert (tmp_path / ".admin_token").stat().st_mode & 0o077 == 0
    remote = load_settings(
        {
            "MINISPHERE_DATA_DIR": str(tmp_path),
            "MINISPHERE_HOST": "0.0.0.0",
            "MINISPHERE_ADMIN_TOKEN": "an-admin-token-of-32-characters!",
        }
    )
    assert remote.admin_token_source == "env"


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "minisphere.example.com", "::"])
def test_a_short_admin_token_off_loopback_refuses_to_start_saying_how_long_it_must_be(
    tmp_path, host
):
    with pytest.raises(ConfigError, match="at least 32 characters") as refused:
        load_settings(
            {
                "MINISPHERE_DATA_DIR": str(tmp_path / "d"),
                "MINISPHERE_HOST": host,
                "MINISPHERE_ADMIN_TOKEN": "x" * 31,
            }
        )
    assert "31-character" in refused.value.message and host in refused.value.message
    assert not (tmp_path / "d").exists()
    on_loopback = load_settings(
        {
            "MINISPHERE_DATA_DIR": str(tmp_path / "l"),
            "MINISPHERE_HOST": "127.0.0.1",
            "MINISPHERE_ADMIN_TOKEN": "x" * 20,
        }
    )
    assert on_loopback.admin_token == "x" * 20  # loopback: 16 characters stay enough


ROOT = Path(__file__).resolve().parents[2]


def documented_table(heading: str) -> str:
    """The markdown table that follows `heading` on the documentation's settings page."""
    text = (ROOT / "docs" / "operate" / "settings.md").read_text(encoding="utf-8")
    after = text[text.index(heading) + len(heading) :]
    lines = after.strip("\n").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| variable"))
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append(line)
    return "\n".join(table)


def test_the_documented_tables_are_the_settings_tables():
    assert (
        documented_table("<!-- service settings: minisphere settings -->") == env_table_markdown()
    )
    assert documented_table(
        "<!-- client settings: minisphere settings --client -->"
    ) == env_table_markdown(CLIENT_ENV_VARS)


def test_every_variable_the_code_reads_is_in_the_table():
    documented = {var.name for var in ENV_VARS + CLIENT_ENV_VARS}
    used = set()
    for path in [
        *(ROOT / "minisphere").rglob("*.py"),
        *(ROOT / "actors").rglob("*.py"),
        ROOT / "serve_app.py",
    ]:
        used |= set(
            re.findall(r"\bMINISPHERE_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(encoding="utf-8"))
        )
    assert used - documented == set(), "read but not documented in minisphere.settings"


def test_an_undocumented_variable_cannot_be_read():
    with pytest.raises(KeyError, match="ENV_VARS"):
        env_value("MINISPHERE_NOT_A_SETTING", {})


def test_settings_command_prints_the_table(capsys):
    from minisphere.cli import main

    assert main(["settings"]) == 0
    assert capsys.readouterr().out.strip() == env_table_markdown()


def test_the_data_folder_is_created_private_and_an_old_one_is_tightened(tmp_path):
    import os
    import stat

    previous = os.umask(0o022)  # the usual default: folders 0755
    try:
        fresh = tmp_path / "fresh" / "data"
        load_settings({"MINISPHERE_DATA_DIR": str(fresh)})
        old = tmp_path / "old"
        old.mkdir()
        old.chmod(0o755)
        load_settings({"MINISPHERE_DATA_DIR": str(old)})
    finally:
        os.umask(previous)
    for folder in (fresh, fresh.parent, old):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((fresh / ".admin_token").stat().st_mode) == 0o600


@pytest.mark.parametrize(
    "args, words",
    [
        ({"MINISPHERE_HIBERNATE_IDEL_S": "30"}, "MINISPHERE_HIBERNATE_IDEL_S"),
        ({"MINISPHERE_ADMIN_TOKEN": "x" * 40}, "nodes' environment"),
        ({"MINISPHERE_S3_SECRET_ACCESS_KEY": "s"}, "nodes' environment"),
        ({"RAY_SERVE_THROUGHPUT_OPTIMIZED": "1"}, "RAY_SERVE_THROUGHPUT_OPTIMIZED"),
    ],
)
def test_a_deploy_config_with_a_mistyped_or_secret_setting_is_refused_by_name(args, words):
    with pytest.raises(ConfigError, match=re.escape(words)):
        deploy_overrides(args)


def test_deploy_config_values_become_the_text_the_loader_reads(tmp_path):
    overrides = deploy_overrides(
        {
            "MINISPHERE_MAX_BATCH": 64,
            "MINISPHERE_ACCESS_LOG": True,
            "MINISPHERE_REPLICATION": "async",
        }
    )
    assert overrides == {
        "MINISPHERE_MAX_BATCH": "64",
        "MINISPHERE_ACCESS_LOG": "true",
        "MINISPHERE_REPLICATION": "async",
    }
    settings = settings_from(tmp_path, overrides)
    assert (settings.max_batch, settings.access_log, settings.replication.mode) == (
        64,
        True,
        "async",
    )
