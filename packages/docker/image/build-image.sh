#!/usr/bin/env bash
# Builds the workspace image with no registry: a Debian bookworm root filesystem made by debootstrap
# from Debian's package mirror, with node (for the gateway), ripgrep, tar and bash, imported into the
# local Docker engine. Skips the work when an image with this script's fingerprint already exists.
# Needs root, debootstrap and the docker CLI. Shipped in @ws/docker (image/), run by `npx ws-docker-image`
# and `DockerWorkspace.ensureImage()`; the repository's docker/build-image.sh runs it too.
#
# node: the host's own node binary (NODE_BIN, default `command -v node`) when it is version 18 or
# newer — it starts the gateway more than twice as fast as Debian's node 18 — else Debian's nodejs
# (18 on bookworm); NODE_FROM=debian takes Debian's nodejs whatever the host has. With the host's
# node comes the host's npm (NPM_DIR, default `$(npm root -g)/npm`) as npm and npx, so that
# `packages: { npm }` and `npx` MCP servers work; Debian's nodejs comes without npm.
#
#   build-image.sh [TAG]        (default TAG: ws-workspace:bookworm)
#   MIRROR=http://deb.debian.org/debian build-image.sh
#   FORCE=1 build-image.sh      (rebuild even when the fingerprint matches)
#
# It also tags TAG-bare (ws-workspace:bookworm-bare): the same image without node and ripgrep, for
# checking that a workspace degrades gracefully on an image that has only the POSIX basics.
set -euo pipefail

TAG=${1:-ws-workspace:bookworm}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
PACKAGES=ripgrep,tar,bash,coreutils,findutils,grep,procps,ca-certificates,util-linux,libstdc++6
if [ "${NODE_FROM:-}" = debian ]; then NODE_BIN=""; else NODE_BIN=${NODE_BIN:-$(command -v node || true)}; fi
node_version=""
if [ -n "$NODE_BIN" ]; then
  node_version=$("$NODE_BIN" --version 2>/dev/null || true)
  major=${node_version#v}; major=${major%%.*}
  if [ -z "$major" ] || [ "$major" -lt 18 ]; then NODE_BIN=""; node_version=""; fi
fi
[ -n "$NODE_BIN" ] || PACKAGES="$PACKAGES,nodejs"
npm_version=""
if [ -n "$NODE_BIN" ]; then
  NPM_DIR=${NPM_DIR:-$(npm root -g 2>/dev/null || true)/npm}
  if [ -f "$NPM_DIR/package.json" ] && [ -f "$NPM_DIR/bin/npm-cli.js" ]; then
    npm_version=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$NPM_DIR/package.json" | head -1)
  fi
fi
# The fingerprint covers this script itself, so any change to the build rebuilds the image.
fingerprint=$( (cat "$0"; echo "$PACKAGES $MIRROR $node_version $npm_version") | sha256sum | cut -c1-16)

BARE="$TAG-bare"

make_bare() {
  local name="ws-build-bare-$$"
  docker rm -f "$name" >/dev/null 2>&1 || true
  docker run --name "$name" "$TAG" sh -c 'rm -rf /usr/local/bin/node /usr/bin/node /usr/bin/nodejs /usr/bin/rg /usr/local/bin/npm /usr/local/bin/npx /usr/local/lib/node_modules/npm' >/dev/null
  docker commit --change "LABEL ws.image.fingerprint=$fingerprint-bare" --change 'CMD ["sleep", "infinity"]' "$name" "$BARE" >/dev/null
  docker rm -f "$name" >/dev/null
  echo "build-image: $BARE built (no node, no ripgrep)"
}

if [ "${FORCE:-}" != 1 ] && docker image inspect "$TAG" --format '{{ index .Config.Labels "ws.image.fingerprint" }}' 2>/dev/null | grep -qx "$fingerprint"; then
  echo "build-image: $TAG is up to date ($fingerprint)"
  docker image inspect "$BARE" --format '{{ index .Config.Labels "ws.image.fingerprint" }}' 2>/dev/null | grep -qx "$fingerprint-bare" || make_bare
  exit 0
fi

command -v debootstrap >/dev/null || { echo "build-image: debootstrap is missing (apt-get install debootstrap)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "build-image: debootstrap needs root (run this as root, e.g. with sudo)" >&2; exit 1; }
rootfs=$(mktemp -d /tmp/ws-rootfs-XXXXXX)
trap 'rm -rf "$rootfs" "$rootfs.log"' EXIT
started=$(date +%s)
echo "build-image: debootstrap bookworm into $rootfs (packages: $PACKAGES)"
debootstrap --variant=minbase --include="$PACKAGES" bookworm "$rootfs" "$MIRROR" >"$rootfs.log" 2>&1 || {
  tail -30 "$rootfs.log" >&2
  echo "build-image: debootstrap failed (the end of its log is above)" >&2
  exit 1
}
rm -f "$rootfs.log"
if [ -n "$NODE_BIN" ]; then
  install -m 0755 "$(readlink -f "$NODE_BIN")" "$rootfs/usr/local/bin/node"
  echo "build-image: node $node_version copied from $NODE_BIN"
  if [ -n "$npm_version" ]; then
    mkdir -p "$rootfs/usr/local/lib/node_modules"
    cp -R "$NPM_DIR" "$rootfs/usr/local/lib/node_modules/npm"
    ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
    ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
    echo "build-image: npm $npm_version copied from $NPM_DIR"
  fi
fi
# A smaller image: no package lists or caches, no docs.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/*
mkdir -p "$rootfs/workspace"
echo "build-image: importing the root filesystem as $TAG"
tar -C "$rootfs" -c . | docker import \
  --change 'CMD ["sleep", "infinity"]' \
  --change 'WORKDIR /workspace' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8' \
  --change "LABEL ws.image.fingerprint=$fingerprint" \
  - "$TAG" >/dev/null
echo "build-image: $TAG built in $(( $(date +%s) - started )) s ($(docker image inspect "$TAG" --format '{{.Size}}' | awk '{printf "%.0f MB", $1/1e6}'))"
make_bare
