"""Errors of the Spark helpers that are not wire errors.

Wire errors (a malformed frame, a broker's refusal) keep their ``wirestream.runtime.errors`` types;
what is raised here is about how a source or sink was configured.  ``DataSource.schema()``
validates options, and Spark calls it at ``load()``, so a bad option fails the query before
it starts, with this message inside Spark's ``AnalysisException``.
"""

from __future__ import annotations

__all__ = ["SparkOptionError", "DataLossError"]


class SparkOptionError(ValueError):
    """A data source option is missing, unknown or has a value that cannot be used.

    The message names the source, the option, the value given and what is accepted.
    """


class DataLossError(Exception):
    """Data a query was due to read is gone: records retention removed from a RabbitMQ
    stream before the query read them, or live items only a previous run's driver held.

    Raised only with ``failOnDataLoss=true`` (the default, Kafka's name and model); the
    message names the source and the lost range.
    """
