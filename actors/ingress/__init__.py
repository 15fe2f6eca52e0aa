"""What one Ray Serve ingress replica runs: the gateway (auth, calls through `parts/reach.py`),
its Prometheus metrics, and the import/export calls."""
