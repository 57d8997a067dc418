"""Running a boot: QEMU's command line, the machine and its phases, QMP, the
backends, snapshots, host sharing and how a boot ended."""
