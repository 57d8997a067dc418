#!/bin/sh
# Start libvirtd (and virtlogd, which keeps QEMU's logs for it) unless they run,
# and wait until qemu:///system answers. As root, or through sudo when not root.
# Uses systemctl where systemd runs; starts the daemons directly where it does
# not (containers, CI machines). Ready means qemu:///system answers a `list`:
# `virsh version` also needs a system QEMU (qemu-system-x86), which the rig
# does not install; its domains run the rig's own QEMU.
set -eu

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

if ! command -v libvirtd >/dev/null 2>&1; then
	echo "start-libvirtd: libvirtd is not installed: run \`make deps\`" >&2
	exit 1
fi
# /dev/kvm as udev leaves it on Debian: group kvm, which libvirt's QEMU user
# (libvirt-qemu) is in. Where no udev runs it is root's alone, and libvirtd
# then finds KVM "not available now" at every capability lookup, drops its
# cached capabilities of the rig's QEMU and probes the binary again: about 20
# probes, 37 s, per domain start. The rig's domains run TCG either way.
if [ -c /dev/kvm ] && getent group kvm >/dev/null && [ "$(stat -c %G /dev/kvm)" != kvm ]; then
	echo "[libvirtd] /dev/kvm: group kvm, mode 0660, as udev sets it"
	$SUDO chgrp kvm /dev/kvm
	$SUDO chmod 0660 /dev/kvm
fi
if virsh -q -c qemu:///system list >/dev/null 2>&1; then
	exit 0
fi
echo "[libvirtd] starting virtlogd and libvirtd"
if [ -d /run/systemd/system ]; then
	$SUDO systemctl start virtlogd.socket libvirtd.socket libvirtd.service
else
	pgrep -x virtlogd >/dev/null || $SUDO virtlogd --daemon
	pgrep -x libvirtd >/dev/null || $SUDO libvirtd --daemon
fi
i=0
until virsh -q -c qemu:///system list >/dev/null 2>&1; do
	i=$((i + 1))
	if [ "$i" -ge 60 ]; then
		echo "start-libvirtd: libvirtd did not answer on qemu:///system within 30 s" >&2
		exit 1
	fi
	sleep 0.5
done
echo "[libvirtd] qemu:///system answers"
