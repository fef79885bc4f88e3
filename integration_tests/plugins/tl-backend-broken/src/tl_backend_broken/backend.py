"""Raises on import, on purpose: the registry must survive a broken plugin (tests only)."""

raise RuntimeError("tl_backend_broken fails to import on purpose (a test plugin)")
