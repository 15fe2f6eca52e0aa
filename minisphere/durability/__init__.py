"""Durability: consistent, checksummed, versioned snapshots of a workspace file (`snapshots`),
where they are kept (`stores`: a folder or S3), when they are taken and retried (`snapshotter`)
and the one boto3 client factory (`s3`), which contract evidence uses too."""
