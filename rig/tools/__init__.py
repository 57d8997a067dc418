"""What the rig does with runs: the CI gate, reports, the bench, replay,
mutants, flakes, determinism and results for CI."""
