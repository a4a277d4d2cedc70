"""Kafka's tiered storage (KIP-405): remote tiers read in place."""
