"""Ray shells around the engine: one WorkspaceActor per workspace, one DirectoryActor, and the
gateway the Serve ingress uses to reach them."""
