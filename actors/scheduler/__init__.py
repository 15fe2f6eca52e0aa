"""The scheduled-tasks actor (`actor.py`, APScheduler) and its narrow access to the workspaces
and to the control plane's maintenance rows (`access.py`)."""
