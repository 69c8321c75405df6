"""``python -m agy_harness.adapters.simulator [--version] [--profile P] [--scenario NAME]``."""

from .cli import main

raise SystemExit(main())
