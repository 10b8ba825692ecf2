"""The base of every error a user can cause; the CLI prints these as one line."""


class CapicuaError(Exception):
    """Bad input from a user or a peer: a bad preset, knob, action, replay or file."""
