"""``python -m toolnexus``: the same as the ``toolnexus`` command."""

from toolnexus.cli.app import main

raise SystemExit(main())
