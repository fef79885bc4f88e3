"""The backend contract: Backend descriptors, the registry, entry-point discovery and Protocols."""
