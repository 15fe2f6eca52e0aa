"""How the tests run a `WorkspaceHost` in process."""

from minisphere.hosting.host_options import HostTuning

# the snapshotter driven by the test (no thread of its own); NORMAL commits, as the service's
BY_HAND = HostTuning(synchronous="NORMAL", background=False)
