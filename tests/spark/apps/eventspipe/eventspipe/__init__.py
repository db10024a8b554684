"""The events pipeline packaged for a dev cluster."""
