"""The pinned contract: files pinned by SHA-256 (`pins`), the engine checked against the
machine-readable surface (`surface`), evidence copies in S3 (`evidence`) and the check every
service process runs before it serves (`startup`). The files live in the top-level
`contracts/`."""
