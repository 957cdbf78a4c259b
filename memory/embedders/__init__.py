"""Embedders: one interface (``base``), one file per implementation."""
