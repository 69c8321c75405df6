"""agy_harness.core."""
