"""Coverage-guided fuzzing of every generated codec and every sans-I/O engine.

- ``targets.py``: the targets by name -- ``codec.<protocol>.<version>`` (six protocol
  versions; rsio's MessagePack encoding too) and ``engine.<protocol>`` (RSocket 1.0 and
  0.2, rsio, BPMUX, the RabbitMQ stream client) -- each a plain function of bytes;
- ``codecs.py`` and ``engines.py`` (with one ``*_scenarios.py`` per engine family): the
  harnesses and the properties they check;
- ``script.py``: how a harness reads its choices from the fuzzer's bytes, the same with
  or without atheris;
- ``worker.py``: one target under atheris (libFuzzer), instrumented;
  ``__main__.py``: ``make fuzz``, every target in turn, time-bounded;
- ``seeds.py``: writes the seed inputs of ``corpus/<target>/`` from the golden vectors
  and the engine openings;
- ``corpus/<target>/``: the committed corpus, replayed by ``make test``
  (tests/fuzz/test_fuzz_corpus.py) through the same functions, without atheris.
"""
