#!/usr/bin/env bash
# Builds the workspace image offline (debootstrap bookworm from Debian's mirror, node copied from the
# host, plus TAG-bare). The build lives in the @ws/docker package, which ships it to npm users
# (`npx ws-docker-image`): packages/docker/image/build-image.sh. This wrapper keeps the repository's
# path working, with the same arguments and environment:
#
#   docker/build-image.sh [TAG]        (default TAG: ws-workspace:bookworm)
#   MIRROR=http://deb.debian.org/debian docker/build-image.sh
#   FORCE=1 docker/build-image.sh      (rebuild even when the fingerprint matches)
set -euo pipefail
exec bash "$(dirname "$(readlink -f "$0")")/../packages/docker/image/build-image.sh" "$@"
