"""The ``storm-py`` command line (click): parse, build the config, call the daemons or the client, print."""
