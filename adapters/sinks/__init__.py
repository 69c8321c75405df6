"""Event sinks: where the harness's domain events go (omnigent over HTTP, a terminal, JSON lines).

Each module is imported on its own (``agy_harness.adapters.sinks.omnigent`` needs httpx, ``terminal``
needs rich); this package imports nothing so picking one sink never loads the others.
"""
