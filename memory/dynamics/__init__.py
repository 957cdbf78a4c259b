"""What changes memory over time: hormones, importance decay and consolidation."""
