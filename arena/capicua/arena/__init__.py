"""Round-robin tournaments between bots (``capicua arena``)."""
