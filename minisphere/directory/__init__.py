"""The directory's logic, apart from Ray: the resident table, placement and binding, the spare
pool, hibernation with the sweep and the cap, token grants, the workspaces' folders and
deletion, wired in `assembly.py`. Its parts reach workspace actors only through the
`ActorRuntime` protocol (`actor_runtime.py`): the directory actor (`actors/directory/`) runs
them over Ray, the tests over an in-process runtime."""
