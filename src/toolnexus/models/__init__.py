"""Model adapters: the neutral messages and tools in, each provider's wire format and official SDK
underneath (optional extras, ``toolnexus[openai]``/``[anthropic]``, imported when a model is made)."""
