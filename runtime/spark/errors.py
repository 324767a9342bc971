"""Errors of the Spark helpers that are not wire errors.

Wire errors (a malformed frame, a broker's refusal) keep their ``runtime.errors`` types;
what is raised here is about how a source or sink was configured.  ``DataSource.schema()``
validates options, and Spark calls it at ``load()``, so a bad option fails the query before
it starts, with this message inside Spark's ``AnalysisException``.
"""

from __future__ import annotations

__all__ = ["SparkOptionError"]


class SparkOptionError(ValueError):
    """A data source option is missing, unknown or has a value that cannot be used.

    The message names the source, the option, the value given and what is accepted.
    """
