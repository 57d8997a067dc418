"""printk-rig: boots printk kernels under QEMU and judges their console output."""
