"""This package owns managed state itself: :class:`~storm_py.stateful.state.key_value.KeyValueState` and its
stores (in memory, Redis, a checkpoint directory), the providers that pick one per task, the namespaces of tasks'
state across rescales and the move of keyed state by key group."""
