"""What every part of capicua shares, below all of them: the project-wide error
(:class:`~capicua.common.errors.CapicuaError`), gRPC channel settings and TLS, tokens, the
lifetime of child processes and the version."""
