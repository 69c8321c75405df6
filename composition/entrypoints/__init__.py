"""The entry points: the CLI's commands, the ACP agent, the omnigent plugin and the board. Each builds
its session from the composition root (:mod:`..root`)."""
