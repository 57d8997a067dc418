"""ci/gate: build a kernel change's base and head, run the scenarios on both,
and say which properties the change broke (rig.tools.gate.main)."""
