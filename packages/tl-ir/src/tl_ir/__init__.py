"""The kernel language (T.*) and its TVM IR: tile ops, scopes, dtypes, diagnostics."""
