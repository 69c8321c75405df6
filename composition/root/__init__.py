"""The composition root: the container (the one place adapters are built), the version gate (the one
chooser of adapters) and the session API built over them."""
