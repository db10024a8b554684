"""``python -m storm_py`` runs the command line."""

from storm_py.cli.main import main

main()
