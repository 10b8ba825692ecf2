"""The authoritative dominoes rules engine.

An immutable :class:`Game` (a ruleset plus precomputed tables) and a mutable
:class:`MatchState`; legal actions, apply, and one observation per seat are separate
concerns. The deal is seeded chance, so a match *is* its seed plus its list of decisions.
"""
