"""Reading a run: the parsers of the console, side channel and register log,
the evidence of one boot, the properties judged on it, logs compared and
titled."""
