"""The durable SQLite outbox: charge and reversal intents, the resolver, recovery."""
