"""Applications built on the wirestream library: the ``wirestream`` command
(``cli``), ``make demo`` (``demo``), the demo responder that ``wirestream rsocket serve``
runs (``demo_responder``) and the market ticker the demo streams (``ticker``).

Nothing in ``wirestream.runtime`` imports from here: the arrows point from the
applications to the library only.
"""
