"""The user-facing programming model of storm_py: tuples, fields, spouts, bolts, builder and declarers (pure data)."""
