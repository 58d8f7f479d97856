"""Entry points that turn a location into a soul: compose, inspect, the revalidating cache, bundles."""
