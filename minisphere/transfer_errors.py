"""Named errors of import/export (`minisphere.transfer`). They subclass the engine's errors, so
`minisphere.http_errors` maps them along the MRO (a bad file is 422, like any bad argument)."""
from .errors import InvalidArgument, MiniSphereError


class TransferError(MiniSphereError):
    code = "transfer_failed"


class ImportFormatError(InvalidArgument):
    """A line of the JSONL file is not a valid export record (the message names the line)."""
    code = "import_format"


class ImportVersionError(ImportFormatError):
    """The file was written by an export format this build does not read."""
    code = "import_version"
