"""``wirestream diff``: what changed between two versions of an IDL and whether a peer
of the old one still understands the new (``compare`` is the entry; ``frames``,
``layout``, ``values`` and ``machines`` compare their parts; ``report`` and ``cli``
print it)."""
