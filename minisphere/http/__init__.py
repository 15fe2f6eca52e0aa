"""The HTTP surface (FastAPI), independent of Ray: it talks to a gateway object. `app` builds
the routes, `handling` reads requests and writes errors, `responses` describes every answer,
`statuses` is the one error -> status table, `request_log` the per-request log line."""
