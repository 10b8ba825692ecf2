"""A standing ladder: entries (bots) play duplicate sets chosen one at a time by a
matchmaker from the results so far, on the arena's one run loop, and a published table
rates them with 95% intervals and rank bands (``capicua ladder``, docs/ladder.md).

* :mod:`.config`: what a ladder is (rules, match format, time control, entries,
  matchmaking), from a TOML file;
* :mod:`.matchmaker`: the pure choice of the next set from the history and the ratings;
* :mod:`.plan`: the ladder as an endless plan of the one run, reading its results;
* :mod:`.table`: the published table (batch fit, anchors, rank bands, provisional flags);
* :mod:`.board` and :mod:`.web`: the leaderboard in the browser (its cached data, and the
  ASGI app served on the run's event loop).
"""
