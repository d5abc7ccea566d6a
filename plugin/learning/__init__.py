"""Learning: finished jobs become observations, changed apps are refitted (learner, importers,
and the daemon's learner thread)."""
