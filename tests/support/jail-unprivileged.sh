#!/usr/bin/env bash
# The jail suite again, as an unprivileged user (make test runs it after the
# main run when that ran as root). A root broker and an unprivileged one jail
# satellites differently — the first drops to the jail uid before bwrap, the
# second uses bwrap's unprivileged user namespace — and both must hold.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ]; then
  echo "jail suite as an unprivileged user: this run already was one"
  exit 0
fi
user=tether-test
id -u "$user" >/dev/null 2>&1 || useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user"
uid=$(id -u "$user")
gid=$(id -g "$user")
work=$(mktemp -d /tmp/tether-unprivileged-XXXXXX)
trap 'rm -rf "$work"' EXIT
as_user() { setpriv --reuid="$uid" --regid="$gid" --clear-groups --reset-env -- env HOME="$work" PATH="$PATH" CI="${CI:-}" "$@"; }
# The user must reach the checkout; when a parent folder is private (a mktemp clone), it runs a copy.
repo=$PWD
if ! as_user test -r "$repo/package.json" -a -x "$repo/node_modules/deno/deno"; then
  echo "jail suite as an unprivileged user: $repo is not reachable by '$user'; copying it"
  repo=$work/repo
  mkdir -p "$repo"
  tar --exclude=./.git -cf - . | tar -xf - -C "$repo"
  chown -R "$uid:$gid" "$repo"
fi
mkdir -p "$work/tmp"
chown "$uid:$gid" "$work" "$work/tmp"
chmod 0711 "$work"
echo "jail suite as unprivileged user '$user' (uid $uid)"
cd "$repo"
# The install-confinement matrix judges the bundler's plugin, the same whoever runs the broker (it was run just now):
# skipped here; the bundling jail itself, which differs, is probed here by host-jobs.test.ts.
as_user node --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects jail --cacheDirectory "$work/tmp/jest-cache" \
  --testPathIgnorePatterns install-confinement
