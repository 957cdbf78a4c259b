"""Outdated facts: which older crystal a newer one replaces (judged on save), and the store side of it."""
