"""The name `storm-py submit` gives a topology when no --name is given."""

from __future__ import annotations

from storm_py.cli.topology import default_name


def test_a_wheel_names_the_topology_after_its_project() -> None:
    assert default_name("my_topology-0.1-py3-none-any.whl", "my_topology.topology:build") == "my-topology"


def test_otherwise_the_functions_module_names_it() -> None:
    assert default_name("project.zip", "wordcount.topology:build") == "wordcount-topology"
    assert default_name("project.zip", "exclaim:build") == "exclaim"
