"""PostgreSQL 3.0 helpers beside the generated codec (``wirestream.generated.postgresql.v3``):
``rows``, DataRow messages to Python values by the columns' types."""

from wirestream.runtime.postgresql.rows import RowDecoder

__all__ = ["RowDecoder"]
