"""The memory's SQLite file: opening it, its schema and migrations, crystal rows, vectors, the store."""
