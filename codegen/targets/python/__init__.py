"""The Python target: codec and strategies (``codec``), Spark schemas (``spark``), the
files of one protocol version formatted as committed (``render``, ``tidy``)."""
