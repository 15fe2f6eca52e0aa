"""What the actors are built from: call admission, the scheduler's due notes, the directory's
view of residency, the narrow access of the scheduled-tasks actor, the remote embedder, the
import/export steps run inside a workspace actor, and `reach`: the one way every caller finds a
workspace actor and follows it through hibernation and crashes."""
