"""The autoscaler's test topology (see :mod:`scaleapp.topology`)."""
