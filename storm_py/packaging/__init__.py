"""Topology packages (wheels, zipped directories), loading ``MODULE:FUNCTION`` from them, and the code-store seam."""
