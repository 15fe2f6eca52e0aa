import sys

from minisphere.cli.main import main

sys.exit(main())
