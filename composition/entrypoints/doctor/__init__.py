"""``agy-harness doctor``: its command line (:mod:`.command`), the probe of a live agy (:mod:`.probe`), this
machine's checks (:mod:`.environment`), the gate lines (:mod:`.gates`) and what the project knows of agy's
shapes (:mod:`.schema`). Nothing is imported here, so the command line stays quick to build."""
