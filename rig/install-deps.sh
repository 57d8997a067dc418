#!/bin/sh
# Install the Debian packages the rig needs, only those missing.
# Idempotent; runs apt-get as root, or through sudo when not root.
# Also adds the deb-src entries that `apt-get source qemu` needs.
set -eu

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "install-deps: not root and no sudo: install as root: $*" >&2
		exit 1
	fi
	SUDO=sudo
fi

SRC_LIST=/etc/apt/sources.list.d/printk-rig-deb-src.sources
started=$(date +%s)
updated=

apt_update() {
	if [ -z "$updated" ]; then
		echo "[deps] apt-get update"
		$SUDO apt-get update -qq
		updated=1
	fi
}

have_deb_src() {
	grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/
}

if ! have_deb_src; then
	echo "[deps] adding deb-src entries ($SRC_LIST) for apt-get source qemu"
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		# Mirror the machine's own deb entries so the same mirrors serve sources.
		sed -n 's/^Types:[[:space:]]*deb$/Types: deb-src/; p' \
			/etc/apt/sources.list.d/debian.sources | $SUDO tee "$SRC_LIST" >/dev/null
	else
		$SUDO tee "$SRC_LIST" >/dev/null <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	fi
	updated=
	apt_update
fi

missing=
for pkg in "$@"; do
	status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
	case "$status" in
	ii*) ;;
	*) missing="$missing $pkg" ;;
	esac
done

if [ -z "$missing" ]; then
	echo "[deps] all $# packages present"
	exit 0
fi

echo "[deps] installing:$missing"
apt_update
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
# shellcheck disable=SC2086
set -- $missing
echo "[deps] installed $# packages in $(($(date +%s) - started)) s"
