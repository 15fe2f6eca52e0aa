"""The workspace over the Model Context Protocol (the official SDK, PyPI `mcp`).

- `tools`     the contract's tools as MCP tools: schemas in and out, annotations, how a
              call's arguments and its refusal travel;
- `guide`     the prompt that tells a model how to use a workspace, and the server's
              instructions;
- `server`    the MCP server (the SDK's low-level `Server`) over a `WorkspaceBackend`: tools,
              the entry and brief resources, the prompt;
- `endpoint`  `/v1/w/{workspace}/mcp` on the HTTP app: Streamable HTTP, stateless, the
              workspace token as Bearer, over the gateway.

`minisphere mcp` (the CLI) serves the same server over stdio, its backend the HTTP client.
"""
