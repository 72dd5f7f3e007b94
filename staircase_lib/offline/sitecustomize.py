"""Cut a Python process and its Python children off the network: sockets may reach only this machine.

``tools/run_chapters.py``, the book build and the grader put this folder first on the kernels' ``PYTHONPATH``;
Python imports ``sitecustomize`` at start-up, so every chapter and submission then runs with the guard on. A cell
that downloads something fails with :class:`NetworkBlockedError` instead of quietly depending on the network.
Loopback addresses, ``localhost`` and Unix sockets stay open (Jupyter's own traffic uses them). Programs that are
not Python, such as ``curl``, are not covered; ``tests/test_notebooks_clean.py`` rejects them in the chapters.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import ipaddress
import os
import socket
import sys
from typing import Any

__all__ = []


class NetworkBlockedError(ConnectionRefusedError):
    """A connection or name lookup for another machine, made while the chapters are checked offline."""

    def __init__(self, attempt: str) -> None:
        super().__init__(f"network access is blocked while the chapters are checked offline: {attempt}")


def _is_local(host: Any) -> bool:
    if host is None:  # getaddrinfo(None, port): the local host
        return True
    if isinstance(host, bytes):
        host = host.decode()
    if not isinstance(host, str):
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _check_address(address: Any) -> None:
    if isinstance(address, tuple) and not _is_local(address[0]):  # AF_UNIX addresses are paths, not tuples
        raise NetworkBlockedError(f"connect to {address!r}")


def _install() -> None:
    connect, connect_ex, getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo

    def guarded_connect(self: socket.socket, address: Any) -> None:
        _check_address(address)
        connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        _check_address(address)
        return connect_ex(self, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> list:
        if not _is_local(host):
            raise NetworkBlockedError(f"look up {host!r}")
        return getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = guarded_connect
    socket.socket.connect_ex = guarded_connect_ex
    socket.getaddrinfo = guarded_getaddrinfo


def _run_shadowed_sitecustomize() -> None:
    """Run the ``sitecustomize`` this module shadows, if there is one (Debian's Python ships one)."""
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


_install()
_run_shadowed_sitecustomize()
