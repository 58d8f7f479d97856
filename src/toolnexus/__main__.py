"""``python -m toolnexus``: the same as the ``toolnexus`` command."""

from toolnexus.cli.app import main

# Guarded: ``audit --dask local`` starts worker processes, which import this module (as
# ``__mp_main__``) to set up the same main module; they must not run the command again.
if __name__ == "__main__":
    raise SystemExit(main())
