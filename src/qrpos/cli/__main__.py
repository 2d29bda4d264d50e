import sys

from qrpos.cli import main

sys.exit(main())
