#!/usr/bin/env bash
# Make sure Debian's Chromium is available for the browser test (tests/test_book.py).
# As root it installs the `chromium` package with apt-get; otherwise it warns loudly and carries on:
# the browser test then skips locally (it always fails in CI, where it must run).
set -euo pipefail

CHROMIUM=/usr/bin/chromium

if [ -x "$CHROMIUM" ]; then
    echo "install_chromium: $CHROMIUM already present"
    exit 0
fi

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "install_chromium: installing Debian chromium with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends chromium
    "$CHROMIUM" --version 2>/dev/null || true
    exit 0
fi

cat >&2 <<'MSG'
************************************************************************
*  WARNING: /usr/bin/chromium is missing and cannot be installed here  *
*  (not root, or no apt-get). The browser test will be SKIPPED.        *
*  To run it, install Chromium as root:                                *
*      apt-get update && apt-get install chromium                      *
************************************************************************
MSG
exit 0
