"""A test topology with an asyncio bolt calling an HTTP endpoint."""
