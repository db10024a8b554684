"""A test topology for topology credentials (``storm-py upload-credentials``)."""
