"""The `edgecron` command-line tool: the local stack now, a client for the HTTP API later."""
