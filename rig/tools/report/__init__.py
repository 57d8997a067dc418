"""rig report: a self-contained HTML page per run directory (verdicts, the
transcript coloured by level, a per-vCPU timeline from the register log),
and an index page for a whole suite."""
