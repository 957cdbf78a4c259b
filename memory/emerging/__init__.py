"""Emerging skills: a task described or done again and again, found, counted, and crystallised into a skill."""
