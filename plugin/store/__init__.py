"""The Redis store: connection, the key schema, curves and observations, decisions, Lua scripts."""
