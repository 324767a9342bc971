"""MySQL 10 helpers beside the generated codec (``wirestream.generated.mysql.v10``):
``rows``, text result-set rows to Python values by the columns' types."""

from wirestream.runtime.mysql.rows import TextRowDecoder

__all__ = ["TextRowDecoder"]
