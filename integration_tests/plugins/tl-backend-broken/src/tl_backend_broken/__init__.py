"""Test plugin whose backend module raises on import: discovery must report it, by package name, and break nothing else."""
