"""wirestream: one YAML IDL for reactive-streams wire protocols, typed code from it.

The distribution installs this one top-level package:

- ``wirestream.codegen``   the generator (``idl/**/*.yaml`` -> typed code), ``codegen/``
- ``wirestream.generated`` the codecs and machines generated from ``idl/``, ``generated/``
- ``wirestream.runtime``   the library those use: sans-I/O engines, asyncio peers, Spark
  data sources, ``runtime/``
- ``wirestream.apps``      applications built on the library: the ``wirestream`` command,
  ``make demo``, the demo responder and the market ticker

The first three are the repository's top-level folders of the same names (the layout the
project keeps): setup.py maps the import names onto them, so the editable install and the
wheel (plain folders under ``wirestream/``) import the same files, each by one path.
"""

from pathlib import Path

__version__ = "0.1.0"

# In a checkout (never in a wheel: no setup.py beside the package there) the three parts are
# the folders beside this one; searching them first makes every checkout -- a clone, a git
# worktree, a copy a test makes -- import its own files, whichever venv's editable install
# runs it (that install's import hook maps the names onto the checkout it was made from).
_CHECKOUT = Path(__file__).resolve().parent.parent
if (_CHECKOUT / "setup.py").is_file() and all(
    (_CHECKOUT / part / "__init__.py").is_file() for part in ("codegen", "generated", "runtime")
):
    __path__.append(str(_CHECKOUT))
