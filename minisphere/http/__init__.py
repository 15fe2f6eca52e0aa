"""The HTTP surface (FastAPI), independent of Ray: it talks to a gateway object. `app` wires
the app, `routes` holds the routes by audience, `callers` the dependencies that say who may
call them, `handling` reads requests and writes errors, `responses` describes every answer,
`statuses` is the one error -> status table, `request_log` the per-request log line."""
