#!/usr/bin/env bash
# Headless Chromium for the HTML report's browser test (test/evaluation/test_report.py).
# Installed from Debian packages when missing; where that cannot be done (no apt-get, not
# root) this says so and returns 0: the rest of the suite runs and that test fails with the
# reason (it never skips).
set -uo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "warning: chromium is missing and apt-get is not available: install a chromium" \
       "package yourself, or the HTML report's browser test fails" >&2
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
  else
    echo "warning: chromium is missing and installing it needs root:" \
         "sudo apt-get install -y --no-install-recommends chromium" >&2
    exit 0
  fi
fi
echo "installing chromium (Debian package) for the HTML report's browser test"
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1; then
  $SUDO apt-get update -q >/dev/null 2>&1
  $SUDO apt-get install -y -q --no-install-recommends chromium >/dev/null \
    || echo "warning: apt-get could not install chromium; the browser test will fail" >&2
fi
exit 0
