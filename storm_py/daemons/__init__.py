"""The cluster daemons: nimbus, supervisor and worker, plus how workers are launched and code is shipped."""
