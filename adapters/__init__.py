"""agy_harness.adapters."""
