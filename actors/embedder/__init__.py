"""The embedder actor (`actor.py`): one shared embedding model per provider in the cluster."""
