"""The chaos soak (issue 30, item 5): every protocol with a Python runtime at once, many
connections, through fault proxies that cut, stall and throttle at random, beside peers
that send garbage or trickle, with the invariants checked as it runs and at its end.

- ``ledger``: what a stream must deliver and how each one ended (``Ledger.violation``
  records a broken invariant the moment it is seen);
- ``faults``: the injector driving the proxies (tests/support/tcp_proxy.py);
- ``resources``: tasks, file descriptors and memory, sampled against their bounds;
- ``rsocket_load``, ``rsio_load``, ``bpmux_load``, ``rabbitmq_load``: servers and clients;
- ``bad_peers``: garbage and trickling clients, a garbage-speaking server;
- ``soak``: ``run_soak(Load, seconds, seed)`` puts them together and returns a
  ``SoakReport``; ``python -m tests.support.chaos --minutes N`` (``make soak``) runs it.
"""

from tests.support.chaos.soak import Load, SoakReport, run_soak

__all__ = ["Load", "SoakReport", "run_soak"]
