"""The IDL front end: YAML read with line numbers (``loader``, ``reader``), checked and
built into the typed model (``build``, ``machines``, ``conditions``) that every later
stage reads (``model``); its one error type names file, line and key (``errors``)."""
