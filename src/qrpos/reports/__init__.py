"""End-of-day arithmetic on the local (UTC+8) business day, and reconciliation."""
