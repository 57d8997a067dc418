#!/bin/sh
# The init of one test host (rig/fleet/netns_hosts.py): runs as the child of
# tini, pid 1 of the host's own pid namespace, in its own network and mount
# namespaces. Gives libvirt private state, pool and runtime directories
# (tmpfs: nobody outside this mount namespace sees them), then runs a
# libvirtd that listens on the host's address alone.
#   host-init.sh ADDRESS POOL_MIB [HIDDEN_DIR...]
# Each HIDDEN_DIR (the harness's tree, cache, run directories, /tmp) becomes
# an empty tmpfs here: the host cannot read a file the harness wrote.
set -eu
addr=$1
pool_mib=$2
shift 2

mount --make-rprivate /
for d in /run /etc/libvirt /var/cache/libvirt /var/log/libvirt; do
	mount -t tmpfs -o mode=0755 tmpfs "$d"
done
# The pools live here: its size is the host's disk.
mount -t tmpfs -o "mode=0755,size=${pool_mib}m" tmpfs /var/lib/libvirt
mount -t proc proc /proc
for d in "$@"; do
	mount -t tmpfs -o mode=0755,size=1m tmpfs "$d"
done
# Consoles are ptys of this host's own.
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts
mount --bind /dev/pts/ptmx /dev/ptmx
mkdir -p /run/lock /run/libvirt /var/lib/libvirt/qemu /var/log/libvirt/qemu

cat >/etc/libvirt/libvirtd.conf <<CONF
listen_tls = 0
listen_tcp = 1
auth_tcp = "none"
listen_addr = "$addr"
log_outputs = "3:stderr"
CONF
# QEMU's stdio log written by libvirt itself (no virtlogd), no cgroups:
# the host shares the machine's cgroup tree with its siblings.
cat >/etc/libvirt/qemu.conf <<CONF
stdio_handler = "file"
cgroup_controllers = [ ]
CONF
ip link set lo up
exec libvirtd --listen
