import sys

from expaudit.cli import main

sys.exit(main())
