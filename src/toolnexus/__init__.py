"""toolnexus: build an AI persona's system prompt from its bootstrap files, wherever they live.

The API lives in :mod:`toolnexus.agents`; importing this package stays cheap.
"""

__version__ = "0.1.0"
