"""The documentation site's sources (mkdocs.yml builds them), its generator (`docs.generate`)
and its runnable examples (`docs/examples/`)."""
