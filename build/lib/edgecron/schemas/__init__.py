"""Request and response models of the HTTP API (pydantic; they also generate the OpenAPI document)."""
