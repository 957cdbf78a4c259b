"""Capture: conversations into memory (formats, the offline extractor, provenance, the capture itself)."""
