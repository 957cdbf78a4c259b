"""Keeping a node safe and healthy: backups, restores and the doctor's checks."""
