"""Development services run as child processes on one machine: dev-zookeeper and the dev cluster."""
