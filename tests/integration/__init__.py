"""Integration tests: against the real local testbed started by deploy/local/up.sh."""
