"""Experiments on rules: the same deals played under two or more rulesets by the same
bots, measured by the engine's records and compared pair by pair (``capicua experiment``).

* :mod:`.config`: what an experiment is (arms, bots, unit, size), from the command line or
  a TOML file;
* :mod:`.metrics`: what is measured, and the paired statistics;
* :mod:`.play`: the experiment as a study of the one run (its pairs' games as matches,
  in-process or over the protocol, into the one results store);
* :mod:`.legacy`: reading directories written before the one results store;
* :mod:`.analysis`: results to comparisons, tables and JSON;
* :mod:`.report`: the HTML report.
"""
