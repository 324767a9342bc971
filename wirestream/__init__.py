"""wirestream: one YAML IDL for reactive-streams wire protocols, typed code from it.

The distribution installs this one top-level package:

- ``wirestream.codegen``   the generator (``idl/**/*.yaml`` -> typed code), ``codegen/``
- ``wirestream.generated`` the codecs and machines generated from ``idl/``, ``generated/``
- ``wirestream.runtime``   the library those use: sans-I/O engines, asyncio peers, Spark
  data sources, ``runtime/``
- ``wirestream.apps``      applications built on the library: the ``wirestream`` command,
  ``make demo``, the demo responder and the market ticker

In the repository the first three are links to the top-level folders of the same names
(the layout the project keeps); a wheel holds them as plain folders.
"""

__version__ = "0.1.0"
