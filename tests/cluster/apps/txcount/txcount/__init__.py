"""A transactional topology for the distributed-cluster tests (see :mod:`txcount.topology`)."""
