"""capicua's rules in other frameworks: every ruleset as an OpenSpiel game
(:mod:`capicua.integrations.openspiel`, ``pip install 'capicua[openspiel]'``). The rules are
the engine's own, never re-implemented: these modules only translate."""
