"""The parts of the directory actor (`actors/directory/actor.py` wires them): the resident
table, placement and binding, the spare pool, hibernation with the sweep and the cap, token
grants, the workspaces' folders and deletion, and the runtime, its one doorway to Ray."""
