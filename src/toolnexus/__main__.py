"""``python -m toolnexus``: the same as the ``toolnexus`` command."""

from .cli import main

raise SystemExit(main())
