"""The targets: one folder per output language with its spelling module(s) and its
jinja2 templates (``python``, ``typescript``, ``wireshark``, and ``docs`` for the
``PROTOCOL.md`` pages), all rendered with the one set-up of ``jinja``."""
