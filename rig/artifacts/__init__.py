"""Build steps of the rig: kernel flavors, QEMU, guest initramfs."""
