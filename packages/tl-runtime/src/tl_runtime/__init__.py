"""Deployable runtime: artifact format, loading, argument checking and execution adapters."""
