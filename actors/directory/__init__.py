"""The directory actor (`actor.py`, the control plane's one owner) and `runtime.py`, its one
doorway to Ray; the directory's logic is `minisphere/directory/`."""
