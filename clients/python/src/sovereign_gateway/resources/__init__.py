"""The gateway-specific resources next to the openai SDK's."""
