"""The application service: the harness and its roles (read driver, emitter, gate bridge, directory
watcher, turn control), built only on ports. The composition root (:mod:`..root`) builds them."""
