"""Use cases: each function is one thing a handler asks for; they combine domain logic and data access."""
