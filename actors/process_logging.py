"""How every service process logs: each line carries its time, so the logs of the nodes and
of the actors on them can be read against each other and against what a caller saw."""

import logging

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_to_stderr(level: int = logging.INFO) -> None:
    """Ray keeps each worker's stderr in its session's logs folder."""
    logging.basicConfig(level=level, format=LOG_FORMAT)
