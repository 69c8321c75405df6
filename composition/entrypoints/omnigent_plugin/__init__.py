"""agy-harness as an omnigent harness plugin (``harness: agy-harness``).

Installed as ``omnigent.community.harness.agy_harness`` (``pip install 'agy-harness[omnigent]'``); the
entry point ``omnigent.community.harness: agy-harness`` names :func:`plugin.get_contribution`. The
modules that import omnigent (``plugin``, ``app``, ``executor``, ``translate``) only load inside
omnigent's environment (Python >= 3.12); ``settings`` and ``answers`` are plain Python.
"""
