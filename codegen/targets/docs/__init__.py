"""The docs target: each protocol version's ``PROTOCOL.md`` (``protocol_md``)."""
