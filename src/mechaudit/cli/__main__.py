import sys

from mechaudit.cli import main

sys.exit(main())
