"""The memory tools: the portable tool, Anthropic's native tool and the pure edit plans under both."""
