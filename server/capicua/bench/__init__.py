"""The benchmarks behind ``capicua bench``: one module per command, on top of the library.

* :mod:`capicua.bench.engine`: random playouts through the rules engine
  (``capicua bench engine``), and the machine description every report carries;
* :mod:`capicua.bench.bots`: duplicate matches between the built-in bots
  (``capicua bench bots``);
* :mod:`capicua.bench.server`: the match server under load over loopback gRPC, against a
  raw grpc.aio echo (``capicua bench server``);
* :mod:`capicua.bench.load`: the one Play load client: bots that hold every seat of the
  matches they create and answer each decision at once;
* :mod:`capicua.bench.arena`: a whole tournament, in-process and over gRPC
  (``capicua bench arena``);
* :mod:`capicua.bench.experiment`: an in-process A/B experiment against the engine's
  playouts (``capicua bench experiment``).

The package sits at the top, beside the command line: it may use every layer below
(engine, wire, bots, server, client, arena), and no library package imports it (an
import-linter contract in ``pyproject.toml``). The command line (:mod:`capicua.cli.bench`)
prints the reports. Importing this package imports nothing: each module is loaded when its
command runs (so ``capicua bench engine`` does not load gRPC). See ``docs/benchmarks.md``.
"""
