"""Use cases shared by the CLI, the MCP server and the watch daemon."""
