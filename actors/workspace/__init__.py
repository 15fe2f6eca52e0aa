"""The workspace actor (`actor.py`) and what it is built from: opening a launch's file, call
admission, the token checks, the scheduler's due notes, position reports, the admin's
operations on the file and the import/export steps, the remote embedder, the process's own
memory and the isolation audit. `launch.py`, what the directory hands it on a bind, is read by
both sides."""
