"""How commands reach a running daemon: the HTTP API, the control socket, the MCP server."""
