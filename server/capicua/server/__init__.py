"""The authoritative gRPC match server (``capicua serve``)."""
