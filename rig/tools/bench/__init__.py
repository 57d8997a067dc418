"""rig bench: printk figures measured in the guest's virtual time, vanilla
and patched side by side (rig.tools.bench.guest), and their table and JSON."""
