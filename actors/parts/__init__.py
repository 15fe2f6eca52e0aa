"""What the actors are built from: call admission, the token checks and the scheduler's due
notes of a workspace actor, the launch the directory hands it, the narrow access of the
scheduled-tasks actor, the remote embedder, the admin's operations on a workspace actor's
file (snapshots, restores, the import/export steps), and `reach`: the one way every caller
finds a workspace actor and follows it through hibernation and crashes. The directory's own
parts are in `actors/directory/`."""
