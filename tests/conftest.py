pytest_plugins = ["tests.zk_fixture"]
