"""The HTTP API (API Gateway HTTP API → Powertools resolver)."""
