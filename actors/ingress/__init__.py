"""What one Ray Serve ingress replica runs: the gateway (auth, calls through
`actors/workspace_reach.py`), its Prometheus metrics, and the import/export calls."""
