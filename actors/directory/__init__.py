"""The directory actor (`actor.py`, the control plane) and its parts, wired in `assembly.py`:
the resident table, placement and binding, the spare pool, hibernation with the sweep and the
cap, token grants, the workspaces' folders and deletion, and the runtime, its one doorway to
Ray."""
