"""Whose budget a failed authentication spends: the TCP peer's, unless the peer is a trusted
proxy (MINISPHERE_TRUSTED_PROXIES), whose X-Forwarded-For then names the client. Behind a load
balancer the peer is the balancer, and one client's bad tokens rate-limited everyone. Behind
Serve's HAProxy front every peer is HAProxy on this node, which names the client the same way."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from starlette.requests import Request

from minisphere.errors import ConfigError
from minisphere.http.handling import client_address
from minisphere.settings import load_settings

BALANCER = "10.0.0.7"


def request_from(
    peer: str,
    forwarded: list[str],
    trusted: str,
    tmp_path,
    front: str = "python",
) -> Request:
    settings = load_settings(
        {
            "MINISPHERE_DATA_DIR": str(tmp_path),
            "MINISPHERE_TRUSTED_PROXIES": trusted,
            "MINISPHERE_HTTP_FRONT": front,
        }
    )
    app = SimpleNamespace(state=SimpleNamespace(gateway=SimpleNamespace(settings=settings)))
    headers = [(b"x-forwarded-for", value.encode()) for value in forwarded]
    return Request(
        {
            "type": "http",
            "method": "GET",
            "path": "/",
            "headers": headers,
            "client": (peer, 40000),
            "app": app,
        }
    )


@pytest.mark.parametrize(
    "peer, forwarded, trusted, client",
    [
        (BALANCER, ["198.51.100.4"], "10.0.0.0/8", "198.51.100.4"),
        (BALANCER, ["198.51.100.4, 10.0.0.9"], "10.0.0.0/8", "198.51.100.4"),  # two balancers
        (BALANCER, ["203.0.113.66, 198.51.100.4"], "10.0.0.0/8", "198.51.100.4"),  # forged left
        (BALANCER, ["198.51.100.4"], "", BALANCER),  # none trusted
        ("198.51.100.9", ["203.0.113.1"], "10.0.0.0/8", "198.51.100.9"),  # not a proxy
        (BALANCER, [], "10.0.0.0/8", BALANCER),
        (BALANCER, ["not-an-address"], "10.0.0.0/8", "not-an-address"),
    ],
)
def test_the_client_is_named_by_trusted_proxies_only(tmp_path, peer, forwarded, trusted, client):
    assert client_address(request_from(peer, forwarded, trusted, tmp_path)) == client


def test_a_trusted_proxy_that_is_not_an_address_stops_startup(tmp_path):
    with pytest.raises(ConfigError, match="MINISPHERE_TRUSTED_PROXIES"):
        load_settings(
            {
                "MINISPHERE_DATA_DIR": str(tmp_path),
                "MINISPHERE_TRUSTED_PROXIES": "10.0.0.0/8, balancer.local",
            }
        )


@pytest.mark.parametrize(
    "peer, forwarded, client",
    [
        ("127.0.0.1", ["198.51.100.4"], "198.51.100.4"),  # HAProxy on this node names it
        ("127.0.0.1", ["203.0.113.66, 198.51.100.4"], "198.51.100.4"),  # a forged hop left
        ("198.51.100.9", ["203.0.113.1"], "198.51.100.9"),  # straight to the replica: the peer
    ],
)
def test_behind_haproxy_the_client_it_names_spends_the_budget(tmp_path, peer, forwarded, client):
    request = request_from(peer, forwarded, "", tmp_path, "haproxy")
    assert client_address(request) == client


def test_an_unknown_http_front_stops_startup(tmp_path):
    with pytest.raises(ConfigError, match="MINISPHERE_HTTP_FRONT"):
        load_settings({"MINISPHERE_DATA_DIR": str(tmp_path), "MINISPHERE_HTTP_FRONT": "nginx"})
