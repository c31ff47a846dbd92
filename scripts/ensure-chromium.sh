#!/usr/bin/env bash
# The browser tests drive Debian's Chromium (never a downloaded browser). Install it when it is
# missing and we may (root with apt-get); otherwise say how. Runs before `npm test`.
set -euo pipefail
CHROMIUM="${SUBCONSCIOUS_CHROMIUM:-/usr/bin/chromium}"
[ -x "$CHROMIUM" ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "== Chromium is missing: installing Debian's chromium package for the browser tests"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  exit 0
fi
echo "Chromium is missing at $CHROMIUM. Install it (Debian: sudo apt-get install -y chromium) or set SUBCONSCIOUS_CHROMIUM." >&2
exit 1
