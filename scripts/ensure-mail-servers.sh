#!/usr/bin/env bash
# The memory source tests start real servers from Debian's packages: Dovecot (IMAP) and Radicale
# (CalDAV). Install them when missing and we may (root with apt-get); otherwise say how. Runs
# before `npm test` and in .ci/run. Dovecot's own service is never started (the tests run their
# own instance on a loopback port with a config in a temp folder).
set -euo pipefail
missing=()
[ -x /usr/sbin/dovecot ] || missing+=(dovecot-imapd)
command -v radicale >/dev/null 2>&1 || python3 -c 'import radicale' >/dev/null 2>&1 || missing+=(radicale)
[ "${#missing[@]}" = 0 ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "== ${missing[*]} missing: installing Debian's packages for the memory source tests"
  apt-get update -qq
  # policy-rc.d 101: the packages' own services are not started (the tests run their own).
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  exit 0
fi
echo "Missing for the memory source tests: ${missing[*]}. Install them (Debian: sudo apt-get install -y ${missing[*]})." >&2
exit 1
