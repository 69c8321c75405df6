"""agy_harness.composition."""
