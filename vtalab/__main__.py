import sys

from vtalab.cli import main

sys.exit(main())
