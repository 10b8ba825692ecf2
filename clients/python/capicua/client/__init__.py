"""Python SDK for writing capicua bots (``capicua bot``)."""
