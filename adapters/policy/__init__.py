"""Rules that answer gates: the shell grammar (:mod:`.shell`) and the rule files in their tiers (:mod:`.files`)."""
