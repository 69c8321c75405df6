"""agy_harness.ports."""
