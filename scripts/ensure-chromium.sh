#!/bin/sh
# Makes Debian's chromium available at /usr/bin/chromium for test/browser.test.ts, which drives it
# with playwright-core (no tool ever downloads a browser). Does nothing when it is there; otherwise
# installs the package with apt-get, refreshing the package lists only if the first attempt fails.
set -eu
CHROMIUM=/usr/bin/chromium
[ -x "$CHROMIUM" ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: $CHROMIUM is missing and there is no apt-get; install Debian's chromium package" >&2
  exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
  as_root=
elif command -v sudo >/dev/null 2>&1; then
  # Never wait for a password nobody can type (CI); ask for it on a terminal.
  if [ -t 0 ]; then as_root=sudo; else as_root="sudo -n"; fi
else
  echo "ensure-chromium: $CHROMIUM is missing; run as root (or with sudo): apt-get install chromium" >&2
  exit 1
fi

echo "ensure-chromium: installing Debian's chromium with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
install_chromium() { $as_root apt-get install -y --no-install-recommends chromium >&2; }
install_chromium || { $as_root apt-get update >&2 && install_chromium; }

if [ ! -x "$CHROMIUM" ]; then
  echo "ensure-chromium: apt-get finished but $CHROMIUM is still missing" >&2
  exit 1
fi
