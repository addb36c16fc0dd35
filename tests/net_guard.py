"""Refuse and record every name lookup and socket connect to a non-loopback address, in-process.

A folder's tests get the guard by importing the fixture into their ``conftest.py``
(``from net_guard import no_network  # noqa: F401``): autouse, it fails a test that let a call out;
an app run as a script installs a :class:`NetGuard` for good (``tests/agno/agno_app.py``).
"""

from __future__ import annotations

import ipaddress
import socket

import pytest

_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def _is_local(host) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode()
    host = str(host).strip("[]")
    if host in _LOCAL_NAMES or host == "":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


class NetGuard:
    def __init__(self) -> None:
        self.attempts: list[str] = []
        self.expect_attempts = False  # a test that shows the guard catches a call sets it

    def install(self, monkeypatch=None) -> None:
        """Patch with ``monkeypatch.setattr`` (pytest's, undone after the test), else for good."""
        real_getaddrinfo, real_connect, real_connect_ex = (
            socket.getaddrinfo,
            socket.socket.connect,
            socket.socket.connect_ex,
        )
        guard = self

        def getaddrinfo(host, *args, **kwargs):
            if not _is_local(host):
                guard.attempts.append(f"getaddrinfo {host}")
                raise socket.gaierror(socket.EAI_NONAME, f"network blocked by the test: {host}")
            return real_getaddrinfo(host, *args, **kwargs)

        def check(address) -> None:
            if isinstance(address, tuple) and not _is_local(address[0]):
                guard.attempts.append(f"connect {address[0]}")
                raise ConnectionRefusedError(f"network blocked by the test: {address[0]}")

        def connect(sock, address):
            check(address)
            return real_connect(sock, address)

        def connect_ex(sock, address):
            check(address)
            return real_connect_ex(sock, address)

        patch = monkeypatch.setattr if monkeypatch is not None else setattr
        patch(socket, "getaddrinfo", getaddrinfo)
        patch(socket.socket, "connect", connect)
        patch(socket.socket, "connect_ex", connect_ex)


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Every test of the folder: a name lookup or connect to anything but loopback is refused and
    recorded; the test fails on any, unless it set ``expect_attempts`` (it shows the guard works)."""
    guard = NetGuard()
    guard.install(monkeypatch)
    yield guard
    if not guard.expect_attempts:
        assert guard.attempts == [], f"network calls left the process: {guard.attempts}"
