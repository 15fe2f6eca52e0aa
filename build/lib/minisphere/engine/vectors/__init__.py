"""The vector binding inside a workspace file (sqlite-vec). Imported only by bound workspaces;
never imports a model: the caller hands in an embedding provider (minisphere.engine.embedding or any
object with `name`, `dim` and `embed(texts)`)."""
