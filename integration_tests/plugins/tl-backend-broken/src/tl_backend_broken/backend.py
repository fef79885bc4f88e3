"""Raises on import, on purpose: the registry must survive a broken plugin."""

raise RuntimeError("tl_backend_broken fails to import on purpose (a test plugin)")
