"""``python -m wirestream``: the same as the ``wirestream`` command."""

from wirestream.apps.cli import main

raise SystemExit(main())
