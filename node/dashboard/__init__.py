"""The dashboard: HTML pages for a person, served by the API server under /ui/ with a session cookie."""
