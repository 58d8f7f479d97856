"""The agent runtime: agent, session, the tool loop, tools and the neutral messages models speak."""
